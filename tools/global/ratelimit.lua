#!lua name=ratelimit
-- SPDX-License-Identifier: GPL-2.0-only
--
-- ratelimit.lua - the Redis side of global limits (Documentation/global.md).
--
-- A Redis Function library (Redis >= 7.0): load it once with
--   redis-cli -x FUNCTION LOAD REPLACE < ratelimit.lua
-- Functions are kept in the RDB and AOF and replicated, so a restarted or
-- promoted Redis still has them (rlsyncd loads them when they are missing).
--
-- Every function works on one resource, whose keys share the hash tag
-- {RES} so that Redis Cluster keeps them on one shard; a caller passes
-- them in this order (rlsyncd does):
--   KEYS[1] rl:{RES}:cfg     hash: the resource's configuration, and in
--                            field "packed" its numbers (cfg_pack())
--   KEYS[2] rl:{RES}:epoch   hash: id of the state; missing = state lost
--   KEYS[3] rl:{RES}:members hash: HOST -> its lease (pack_fields()); field
--                            "" the cached round of a large resource, with
--                            its configuration (prepare(), cache_parse())
--   KEYS[4] rl:{RES}:bucket  hash: the token bucket of batch mode
-- rl_lease, rl_leave and rl_info use only the first three, and rlsyncd
-- passes three to rl_lease: in a Redis Cluster migrating the slot, the
-- importing node serves a call after ASKING only if all its keys are
-- there, and the bucket does not exist in lease mode. rl_lease_many
-- renews several resources of one slot: those three of each in turn.
-- Rates are tokens per second, returned as decimal strings; times are
-- milliseconds of Redis's clock (TIME), durations relative ones. Errors
-- are "RLxxx text" replies so that callers can tell them apart.
--
-- Invariant of lease mode, at every instant of Redis's clock:
--   sum over members of max(has, quarantined has, floor) <= capacity
-- where a member's has counts until its lease expires, a quarantined has
-- until the member acknowledges the decrease or its old lease expires,
-- and its floor until its membership expires (lease + hold).
--
-- Copyright (C) 2026 The ratelimit authors

local ALGOS = { fair = 1, proportional = 2, static = 3 }
local ALGO_NAMES = { 'fair', 'proportional', 'static' }
local MODES = { lease = 1, batch = 2 }
local MODE_NAMES = { 'lease', 'batch' }
local EPS = 1e-9
-- Rates travel as text of 6 decimals (fmt() in the replies, the agents'
-- arguments): a rate reported within this of a stored one is that rate,
-- though the stored double is not what the text rounded it to.
local RATE_EPS = 1e-6
-- The stored numbers (a member, the cached round, the configuration's
-- field "packed") are IEEE doubles packed with struct.pack after a first
-- byte 1 (FORMAT): text would cost a renewal several us of
-- string.format and parsing. Members and rounds in the text of older
-- libraries (which begin with a digit) are read as well, and rewritten
-- packed at their next write.
local FORMAT = 1
local MEMBER = '<Bddddddddd'
local ROUND = '<Bdddddd'
local ROUND_ID = ROUND .. 'c0' -- then the epoch's id, the field's rest
local PACKED = '<BBBddddddd'
-- A round that carries its configuration (cache_parse()) begins with
-- this byte instead, or with ROUND_STEADY when it is steady (steady()).
local ROUND_CFG = 2
local ROUND_STEADY = 3
local PACKED_LEN = 3 + 7 * 8 -- struct.size(PACKED), not callable at load
-- A resource of more members than SMALL takes its shares from a round
-- cached in its members hash, in the field CACHE (no host is empty:
-- rl_lease refuses one); see prepare().
local SMALL = 64
local CACHE = ''

-- Fail with the error reply "CODE text": CODE is RLARG, RLNOCONF or RLMODE.
local function fail(msg)
	return error(redis.error_reply(msg))
end

local function now_ms()
	local t = redis.call('TIME')
	return tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end

-- A memo of a pure function, by its argument: { t = {}, n = 0, max = N },
-- emptied when it holds max entries. What it keeps is only ever what a
-- call would compute again, so a Redis that starts with it empty (a
-- restart, a promoted replica, the library loaded again) answers the same.
local function memo(max)
	return { t = {}, n = 0, max = max }
end

local function memo_put(m, k, v)
	if m.n >= m.max then
		m.t, m.n = {}, 0
	end
	m.t[k] = v
	m.n = m.n + 1
end

-- The numbers of arguments, by their text: a host's calls repeat theirs
-- (its weight, its floor, a steady demand). Only numbers an argument may
-- be are kept (finite, not below 0), so a call finds them checked.
local num_memo = memo(1024)

local function num(v, what, min)
	local n = num_memo.t[v]
	if n == nil then
		n = tonumber(v)
		if n == nil or n ~= n or n < 0 or n == math.huge then
			n = nil
		elseif type(v) == 'string' then
			memo_put(num_memo, v, n)
		end
	end
	if n == nil or (min and n < min) then
		return fail('RLARG bad ' .. what .. ': ' .. tostring(v))
	end
	return n
end

-- A number as the decimal text of a reply. The rates a call formats
-- recur (a steady share, a floor of 0): those last formatted are kept.
local fmt_memo = memo(1024)

local function fmt(n)
	local s = fmt_memo.t[n]
	if s == nil then
		s = string.format('%.6f', n)
		if n == n then
			memo_put(fmt_memo, n, s)
		end
	end
	return s
end

-- A member's lease, packed in one hash field (FORMAT): wants, has,
-- quarantined has and until when, lease end, membership end, weight,
-- floor, and rsv, what the share cache counts it for (see round()), -1
-- when it counts nothing.
local function pack_fields(wants, has, qhas, quntil, lexp, mexp, weight,
			   floor, rsv)
	return struct.pack(MEMBER, FORMAT, wants, has, qhas, quntil, lexp,
			   mexp, weight, floor, rsv)
end

-- The numbers of a field in the text of older libraries, in order.
local function numbers(s)
	local v = {}
	for w in string.gmatch(s, '%S+') do
		v[#v + 1] = tonumber(w)
	end
	return v
end

-- The numbers of the member packed in @s, in pack_fields()'s order: what
-- a round and a call read of a member, without a table.
local function fields(s)
	if string.byte(s) == FORMAT then
		local _, wants, has, qhas, quntil, lexp, mexp, weight, floor,
		      rsv = struct.unpack(MEMBER, s)
		return wants, has, qhas, quntil, lexp, mexp, weight, floor, rsv
	end
	local v = numbers(s)
	return v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9] or -1
end

-- The member packed in @s, as a table (the exact path, rl_leave and
-- rl_info).
local function unpack_member(s)
	local wants, has, qhas, quntil, lexp, mexp, weight, floor, rsv =
		fields(s)
	return { wants = wants, has = has, qhas = qhas, quntil = quntil,
		 lexp = lexp, mexp = mexp, weight = weight, floor = floor,
		 rsv = rsv }
end

-- The configuration from all its fields (rl_config, rl_info, and a
-- configuration without a valid field "packed").
local function load_cfg(keys)
	local raw = redis.call('HGETALL', keys[1])
	if #raw == 0 then
		return nil
	end
	local c = {}
	for i = 1, #raw, 2 do
		c[raw[i]] = raw[i + 1]
	end
	for _, k in ipairs({ 'capacity', 'lease_ms', 'refresh_ms', 'hold_ms',
			     'static', 'burst', 'version' }) do
		c[k] = tonumber(c[k])
	end
	return c
end

-- The configuration's numbers in one field, written with the others by
-- rl_config: what a call reads instead of all of them (one HMGET, no
-- parsing). Valid only for the version it packs (field "version"): a
-- configuration written since by an older library, which does not know
-- this field, is read from all its fields again.
local function cfg_pack(c)
	return struct.pack(PACKED, FORMAT, MODES[c.mode], ALGOS[c.algorithm],
			   c.capacity, c.lease_ms, c.refresh_ms, c.hold_ms,
			   c.static, c.burst, c.version)
end

-- Whether cfg_pack() can pack @c: a configuration of every field.
local function packable(c)
	for _, k in ipairs({ 'capacity', 'lease_ms', 'refresh_ms', 'hold_ms',
			     'static', 'burst', 'version' }) do
		if type(c[k]) ~= 'number' then
			return false
		end
	end
	return MODES[c.mode] ~= nil and ALGOS[c.algorithm] ~= nil
end

-- The configurations last unpacked, by their packed text (the same
-- text, the same configuration: read-only tables, whatever resource they
-- came from). A configuration keeps its text as text: what a round
-- carries (cache_pack()).
local cfg_memo = memo(256)

local function cfg_parse(s)
	local c = cfg_memo.t[s]
	if c == nil then
		local _, mode, algo, capacity, lease_ms, refresh_ms, hold_ms,
		      static, burst, v = struct.unpack(PACKED, s)
		c = { mode = MODE_NAMES[mode], algorithm = ALGO_NAMES[algo],
		      capacity = capacity, lease_ms = lease_ms,
		      refresh_ms = refresh_ms, hold_ms = hold_ms,
		      static = static, burst = burst, version = v,
		      vtext = tostring(v), text = s }
		memo_put(cfg_memo, s, c)
	end
	return c
end

-- The configuration packed in @s, if it is that of the field "version"
-- @version.
local function cfg_unpack(s, version)
	if s == false or #s ~= PACKED_LEN or string.byte(s) ~= FORMAT then
		return nil
	end
	local c = cfg_parse(s)
	if c.vtext ~= version and c.version ~= tonumber(version) then
		return nil
	end
	return c
end

-- The configuration, or the RLNOCONF error the agent answers by
-- configuring the resource again (Redis lost it) or reporting it unknown.
-- One without a valid field "packed" (written by an older library) is
-- read from all its fields, and the field written for the next call.
local function need_cfg(keys, mode)
	local got = redis.call('HMGET', keys[1], 'packed', 'version')
	local c = cfg_unpack(got[1], got[2])
	if c == nil then
		c = load_cfg(keys)
		if c == nil then
			return fail('RLNOCONF unknown resource')
		end
		if packable(c) then
			c.text = cfg_pack(c)
			redis.call('HSET', keys[1], 'packed', c.text)
		end
	end
	if c.mode ~= mode then
		return fail('RLMODE resource is in ' .. c.mode .. ' mode')
	end
	return c
end

-- The epoch, and the end of the learning period: a missing epoch means
-- that Redis lost the resource's state, so hosts may hold leases and
-- floors nobody remembers; until they have all ended (one lease, then
-- hold), nobody gets more than it holds.
local function epoch(keys, c, now)
	local e = redis.call('HMGET', keys[2], 'id', 'learn_until')
	if e[1] then
		return e[1], tonumber(e[2])
	end
	local id = string.format('%d', now)
	local learn = now + c.lease_ms + c.hold_ms
	redis.call('HSET', keys[2], 'id', id, 'learn_until', fmt(learn))
	return id, learn
end

--------------------------------------------------------------------------
-- Configuration

-- rl_config: KEYS as above; ARGV: by, mode, capacity, algorithm, lease_ms,
-- refresh_ms, hold_ms, static, burst. The last configuration written wins
-- (agents write it when they start, reload, or find it lost); its version
-- goes up by one when it changes, and the cached round, which carries the
-- configuration it was computed for, is deleted (KEYS[3]), so that the
-- next call reads the new one. Returns { version, changed }.
local function rl_config(keys, args)
	local mode, algo = args[2], args[4]
	if not MODES[mode] then
		return fail('RLARG bad mode: ' .. tostring(mode))
	end
	if not ALGOS[algo] then
		return fail('RLARG bad algorithm: ' .. tostring(algo))
	end
	local new = {
		by = tostring(args[1]), mode = mode, algorithm = algo,
		capacity = num(args[3], 'capacity'),
		lease_ms = num(args[5], 'lease_ms', 100),
		refresh_ms = num(args[6], 'refresh_ms', 10),
		hold_ms = num(args[7], 'hold_ms'),
		static = num(args[8], 'static'),
		burst = num(args[9], 'burst'),
	}
	if new.capacity <= 0 then
		return fail('RLARG capacity must be above 0')
	end
	if new.refresh_ms > new.lease_ms then
		return fail('RLARG refresh_ms above lease_ms')
	end
	local old = load_cfg(keys)
	local same = old ~= nil
	for _, k in ipairs({ 'mode', 'algorithm', 'capacity', 'lease_ms',
			     'refresh_ms', 'hold_ms', 'static', 'burst' }) do
		same = same and tostring(old[k]) == tostring(new[k])
	end
	if same then
		-- written by an older library: its numbers packed now
		if packable(old) and
		   not cfg_unpack(old.packed or false, tostring(old.version)) then
			redis.call('HSET', keys[1], 'packed', cfg_pack(old))
		end
		return { old.version, 0 }
	end
	new.version = (old and old.version or 0) + 1
	local w = { 'HSET', keys[1] }
	for k, v in pairs(new) do
		w[#w + 1] = k
		w[#w + 1] = tostring(v)
	end
	w[#w + 1] = 'packed'
	w[#w + 1] = cfg_pack(new)
	redis.call(unpack(w))
	-- the round carries the configuration it was computed for: the
	-- next call computes one of this configuration
	if keys[3] then
		redis.call('HDEL', keys[3], CACHE)
	end
	epoch(keys, new, now_ms())
	return { new.version, 1 }
end

--------------------------------------------------------------------------
-- Lease mode

-- What a member holds at @now: its lease until it expires, a decrease not
-- yet acknowledged, and its floor while it is a member; from its fields
-- (fields()), or its table (reserved()).
local function held(has, qhas, quntil, lexp, floor, now)
	local r = floor
	if now < lexp and has > r then
		r = has
	end
	if now < quntil and qhas > r then
		r = qhas
	end
	return r
end

local function reserved(m, now)
	return held(m.has, m.qhas, m.quntil, m.lexp, m.floor, now)
end

-- The members in the fields and values @raw of the members hash
-- (HGETALL), without those whose membership expired (deleted).
local function load_members(keys, raw, now)
	local ms = {}
	for i = 1, #raw, 2 do
		local m = raw[i] ~= CACHE and unpack_member(raw[i + 1])
		if m and now >= m.mexp then
			redis.call('HDEL', keys[3], raw[i])
		elseif m then
			ms[raw[i]] = m
		end
	end
	return ms
end

-- The water level of demands @d with weights @w (arrays of @n) sharing
-- @cap > 0 when they do not all fit, walking them by d / w: the members
-- below the level take their demand, the others share the rest by weight.
local function level_sorted(cap, d, w, n)
	local order, wsum = {}, 0
	for i = 1, n do
		order[i] = i
		wsum = wsum + w[i]
	end
	table.sort(order, function(a, b) return d[a] / w[a] < d[b] / w[b] end)
	for _, i in ipairs(order) do
		if d[i] * wsum >= cap * w[i] then
			return cap / wsum
		end
		cap = cap - d[i]
		wsum = wsum - w[i]
	end
	return -1
end

-- The shares of demands @d with weights @w (arrays of @n) in @cap, as two
-- numbers from which any member's follows (share()): the water level of
-- the fair algorithm (a member's share is min(wants, weight x level); -1
-- when every demand fits) and the ratio of the proportional one (share =
-- wants x weight x ratio; -1 when every demand fits). The level is the L
-- at which the sum of min(d, w x L) is @cap, found by Newton's method on
-- that sum from cap / (sum of weights): each step, O(n), takes the members
-- below the level at their demand and shares the rest among the others.
-- The level only rises, and the first step that takes no new member has
-- the level exactly (that of level_sorted()): two to four steps for the
-- demands of a fleet, a step a member at worst (each demand just above
-- the level of the step before), so after FILL_STEPS steps the members
-- are walked in order instead, O(n log n). Sorting them every round, as
-- before, took two thirds of a round of 1,000 members.
local FILL_STEPS = 16

local function fill(cap, d, w, n)
	local sum, dsum, wsum = 0, 0, 0
	for i = 1, n do
		sum = sum + d[i] * w[i]
		dsum = dsum + d[i]
		wsum = wsum + w[i]
	end
	local ratio = -1
	if sum > cap and sum > 0 then
		ratio = math.max(0, cap) / sum
	end
	if n == 0 or dsum < cap then
		return -1, ratio
	elseif cap <= 0 then
		return 0, ratio
	end
	local level, took = cap / wsum, -1
	for _ = 1, FILL_STEPS do
		local below, taken, rest = 0, 0, 0
		for i = 1, n do
			if d[i] < w[i] * level then
				below = below + 1
				taken = taken + d[i]
			else
				rest = rest + w[i]
			end
		end
		if below == took or rest <= 0 then
			return level, ratio
		end
		took = below
		level = (cap - taken) / rest
	end
	return level_sorted(cap, d, w, n), ratio
end

-- The shares (fill()) of the members @ms: the capacity less the floors of
-- members with no lease (@host counts as one with a lease), divided among
-- the others.
local function shares(c, ms, host, now)
	local cap, d, w, n = c.capacity, {}, {}, 0
	for id, m in pairs(ms) do
		if id == host or now < m.lexp then
			n = n + 1
			d[n], w[n] = m.wants, m.weight
		else
			cap = cap - m.floor
		end
	end
	return fill(cap, d, w, n)
end

-- The target share under the algorithm of a member wanting @wants at
-- @weight, from its round's level and ratio (shares()). The functions of
-- a renewal compare numbers where they could call math.min and math.max:
-- a call into C costs Redis about 500 instructions, and a renewal made a
-- dozen (a twentieth of its cost, callgrind).
local function share(c, wants, weight, level, ratio)
	if c.algorithm == 'static' then
		return math.min(wants, c.static)
	elseif c.algorithm == 'proportional' then
		return ratio < 0 and wants or wants * weight * ratio
	end
	if level < 0 or wants < weight * level then
		return wants
	end
	return weight * level
end

-- Capacity not reserved by the members other than @host.
local function free_for(c, ms, host, now)
	local free = c.capacity
	for id, m in pairs(ms) do
		if id ~= host then
			free = free - reserved(m, now)
		end
	end
	return free
end

-- The floor a host holding @floor may reserve: what it asks for, as far
-- as the capacity @free that others leave allows. A floor never shrinks
-- while the host is a member: a host whose reply is lost would keep
-- running at the old one.
local function grant_floor(floor, want, free, reported, learning)
	local f = want
	if free < f then
		f = free
	end
	if floor > f then
		f = floor
	end
	if learning and reported < f then
		f = reported
	end
	return f > 0 and f or 0
end

-- The numbers of a member's record packed in @s at @now, before its
-- call: wants, has, qhas, quntil, lexp, weight and floor, as fields()
-- gives them, without the rate of a lease that ended; those of a new
-- member, holding nothing and no floor, for no record (nil or false) or
-- a membership that ended. Then rsv, what the round counts the record
-- for, even when the membership ended (-1: no record). A call reads its
-- member's record as numbers, not a table.
local function as_of(s, now)
	if not s then
		return 0, 0, 0, 0, 0, 1, 0, -1
	end
	local wants, has, qhas, quntil, lexp, mexp, weight, floor, rsv =
		fields(s)
	if now >= mexp then
		return 0, 0, 0, 0, 0, 1, 0, rsv
	end
	if now >= lexp then
		has = 0
	end
	return wants, has, qhas, quntil, lexp, weight, floor, rsv
end

-- A decrease is quarantined until the host acknowledges it (reports that
-- it runs at no more than its last grant) or its old lease ends: until
-- then it may still run at the old rate (the reply may be lost). None when
-- the host already runs at no more than the new grant (it lowered its
-- limiter to its demand before asking): lost or not, the reply changes
-- nothing it runs at. Returns the quarantined has and its end (@qhas and
-- @quntil before) of a member granted @has after @old, whose lease ended
-- at @old_exp.
local function quarantine(has, qhas, quntil, old, old_exp, reported, now)
	if reported <= old + RATE_EPS then
		quntil = 0
	end
	if has < old - EPS and now < old_exp and reported > has + RATE_EPS then
		if now >= quntil then
			qhas = old
		else
			qhas = math.max(qhas, old)
		end
		quntil = math.max(quntil, old_exp)
	end
	return qhas, quntil
end

-- The round of a large resource (more than SMALL members), cached in the
-- field CACHE (FORMAT): T VERSION LEVEL RATIO RSUM LEARN, then EPOCH: when
-- it was computed, for which configuration, the level and ratio of
-- shares(), the sum of what the members are counted for (their field
-- rsv), and the epoch read when it was computed (its end of learning,
-- then its id). A member's rsv is at least what it reserves (reserved()
-- only falls until the member calls again, and each call counts it
-- anew), so capacity less the others' rsv never exceeds what they leave
-- free: the bound holds between rounds, and capacity whose lease ended
-- comes back at the next round. The epoch read with the round spares
-- the calls between rounds a read: while the members hash holds the
-- round, Redis has not lost the members' state (a lost epoch alone is
-- seen at the next round, as before). A round in the text of an older
-- library holds no epoch: a call computes it anew. A round that begins
-- with ROUND_CFG or ROUND_STEADY has the configuration's packed text
-- (cfg_pack()) between LEARN and EPOCH: the configuration it was
-- computed for, which the calls between rounds take from it instead of
-- reading it. rl_config deletes the round when it changes the
-- configuration; a round of FORMAT, or whose configuration does not
-- parse, is used with the configuration read.
local function cache_parse(s)
	local f = string.byte(s)
	if f == FORMAT or f == ROUND_CFG or f == ROUND_STEADY then
		local _, t, version, level, ratio, rsum, learn, i =
			struct.unpack(ROUND, s)
		local k = { t = t, version = version, level = level,
			    ratio = ratio, rsum = rsum, learn = learn,
			    steady = f == ROUND_STEADY }
		if f ~= FORMAT then
			k.c = cfg_unpack(string.sub(s, i, i + PACKED_LEN - 1),
					 version)
			i = i + PACKED_LEN
		end
		k.id = i <= #s and string.sub(s, i) or nil
		return k
	end
	local v = numbers(s)
	return { t = v[1], version = v[2], level = v[3], ratio = v[4],
		 rsum = v[5] }
end

-- The rounds last parsed, by their text: a round stays the same text
-- while its members' shares are steady, read by every renewal until the
-- next round (read-only tables, whatever resource they came from).
local round_memo = memo(256)

local function cache_read(s)
	local k = round_memo.t[s]
	if k == nil then
		k = cache_parse(s)
		memo_put(round_memo, s, k)
	end
	return k
end

-- The round @k, with @rsum for its sum (and its configuration, when it
-- has one packed).
local function cache_pack(k, rsum)
	if k.c and k.c.text then
		return struct.pack(ROUND, k.steady and ROUND_STEADY or ROUND_CFG,
				   k.t, k.version, k.level, k.ratio, rsum,
				   k.learn or 0) ..
		       k.c.text .. (k.id or '')
	end
	return struct.pack(ROUND_ID, FORMAT, k.t, k.version, k.level,
			   k.ratio, rsum, k.learn or 0, k.id or '')
end

-- A new round of the configuration @c at @now from the fields and values
-- @raw of the members hash (HGETALL), and its number of members; with
-- what the round counts @host for (nil when it is not a member). Each
-- member is counted for what it reserves now (its field rsv rewritten
-- when that changed), and deleted when its membership ended. A round
-- reads the members' numbers (fields()), not a table each.
local function round(keys, c, raw, host, now)
	local k = { t = now, version = c.version, c = c }
	local cap, rsum, d, w, n, live, counted = c.capacity, 0, {}, {}, 0, 0
	for i = 1, #raw, 2 do
		local id, s = raw[i], raw[i + 1]
		if id ~= CACHE then
			local wants, has, qhas, quntil, lexp, mexp, weight,
			      floor, rsv = fields(s)
			if now >= mexp then
				redis.call('HDEL', keys[3], id)
			else
				local r = held(has, qhas, quntil, lexp, floor,
					       now)
				if r ~= rsv then
					redis.call('HSET', keys[3], id,
						   pack_fields(wants, has, qhas,
							       quntil, lexp,
							       mexp, weight,
							       floor, r))
				end
				if id == host then
					counted = r
				end
				rsum = rsum + r
				live = live + 1
				if now < lexp then
					n = n + 1
					d[n], w[n] = wants, weight
				else
					cap = cap - floor
				end
			end
		end
	end
	k.rsum = rsum
	k.level, k.ratio = fill(cap, d, w, n)
	return k, live, counted
end

-- A new round @k is steady when it found what the round @old before it
-- had: the same epoch and configuration, a level and a ratio within
-- STEADY of @old's, and a sum within STEADY of the capacity of @old's.
-- A steady round lasts a whole refresh, any other half of one (life()):
-- a resource whose shares are steady makes a round a refresh, a member
-- calling once a refresh, not two. What a round does not see until the
-- next (a lease ended: its capacity back; demands that drift by less
-- than MOVED, below) waits up to a refresh then; a round that finds any
-- of that by more than STEADY is not steady, and the next comes half a
-- refresh after it again. A round costs Redis about 11,000 instructions
-- a member (callgrind at 1,000: HGETALL, its reply turned into Lua, and
-- the loop of round()); at 1,000 hosts × 100 resources, R = 1 s, rounds
-- twice a refresh were a quarter of a primary's instructions.
local STEADY = 0.01

local function near(a, b, scale)
	local d = a - b
	if d < 0 then
		d = -d
	end
	return d == 0 or d <= STEADY * scale
end

local function steady(old, k, c)
	return old.id == k.id and old.version == k.version and
	       near(old.level, k.level, old.level) and
	       near(old.ratio, k.ratio, old.ratio) and
	       near(old.rsum, k.rsum, c.capacity)
end

-- How long the round @k of the configuration @c lasts (steady()).
local function life(k, c)
	return k.steady and c.refresh_ms or c.refresh_ms / 2
end

-- Whether a call at @now takes its share from the round @k of the
-- configuration @c: a round of it, younger than its life().
local function current(k, c, now)
	return k.id and k.version == c.version and now >= k.t and
	       now - k.t < life(k, c)
end

-- A call whose target share (share() of its wants) moves by more than
-- MOVED of the larger owes its resource a round: the round is due an
-- eighth of a refresh after the call (OWE_PART), when not due sooner. A
-- round then counts a demand shift's reports as they come, not up to
-- a life() later, and the hosts that take the capacity freed
-- (their agents renew again soon after a rise) have it within a refresh
-- of the shift. A host that leaves (rl_leave) owes one too. Rounds stay
-- at least OWE_PART of a refresh apart: a round made at T is due at
-- T + life(), or at a call's time + OWE_PART of a refresh, whichever is
-- sooner, the call coming after T.
local MOVED = 0.5
local OWE_PART = 1 / 8

-- The round @k of the configuration @c owed by a call at @now: @k, or a
-- copy due sooner (its time moved earlier: current() reads the age),
-- marked owed so that the call writes it.
local function owed(k, c, now)
	local t = now + c.refresh_ms * OWE_PART - life(k, c)
	if t >= k.t then
		return k
	end
	local o = { owed = true }
	for f, v in pairs(k) do
		o[f] = v
	end
	o.t = t
	return o
end

-- The round @k with @c's call at @now by a member whose target moved
-- from @was to @is: @k, or owed() when it moved by more than MOVED.
local function owe(k, c, now, was, is)
	local lo, hi = was, is
	if lo > hi then
		lo, hi = hi, lo
	end
	if hi - lo <= MOVED * hi then
		return k
	end
	return owed(k, c, now)
end

-- For @host's call, wanting @wants at @weight, with the text @cached of
-- its resource's round (false: none) and @rsv, what that round counts it
-- for (as_of()): the configuration (need_cfg(), or the one the round
-- carries), the round (the level and ratio of its share, the epoch's id
-- and end of learning: epoch()), the capacity the others leave free, and
-- what the round counted @host for (nil without a round). A large
-- resource's call reads the round and its own member (O(1)); the round
-- is computed anew when it is older than its life() or of another
-- configuration, or when a call owed it one (owe()), from every member
-- (round(): O(N), once a refresh while the members' shares are steady,
-- up to eight times while they move: O(1) per call amortised, every
-- member calling once a refresh). Up to SMALL members every call reads
-- them all and computes its share exactly, as a new round does.
local function prepare(keys, cached, rsv, host, wants, weight, now)
	local k = cached and cache_read(cached)
	local c = k and k.c
	local cur = c and current(k, c, now)
	if not cur then
		c = need_cfg(keys, 'lease')
		cur = k and current(k, c, now)
	end
	if cur then
		local counted = rsv > 0 and rsv or 0
		return c, k, c.capacity - (k.rsum - counted), counted
	end
	local id, learn = epoch(keys, c, now)
	local raw = redis.call('HGETALL', keys[3])
	if #raw / 2 - (cached and 1 or 0) > SMALL then
		local old, live, counted = k
		k, live, counted = round(keys, c, raw, host, now)
		if live > SMALL then
			k.id, k.learn, k.fresh = id, learn, true
			k.steady = old and steady(old, k, c)
			counted = math.max(counted or -1, 0)
			return c, k, c.capacity - (k.rsum - counted), counted
		end
	end
	if cached then
		redis.call('HDEL', keys[3], CACHE)
	end
	local ms = load_members(keys, raw, now)
	-- @host counts for its new demand (shares()); free_for() skips it
	ms[host] = { wants = wants, weight = weight }
	local level, ratio = shares(c, ms, host, now)
	return c, { level = level, ratio = ratio, id = id, learn = learn },
	       free_for(c, ms, host, now), nil
end

-- When a host renews next, the refresh_ms of its reply: after the
-- configuration's refresh, or after SOON of it when the host has less
-- than it wants and is on its way up, out of learning: its grant rose by
-- more than RISE (others gave capacity back in a large move, and a round
-- counts those that follow an eighth of a refresh after them: owe(); a
-- rise of a tenth called hosts back after a leave of a tenth, where they
-- took a level the next round lowered, and held it until acknowledged),
-- or it is short of its share @s by more than SHORT, the 2 % within
-- which shares are said to have converged (that capacity is still
-- reserved for others, who acknowledge their decrease a quarter of a
-- refresh after it; a level that moves by a percent between rounds
-- lowers every host above it). The host takes the rest then, not a
-- refresh later. A grant that fell needs no call back: the host renews a
-- quarter of a refresh after a decrease anyway, to acknowledge it. Nor
-- does a static share, which the others' demand does not move (the
-- statics of many hosts may add up to more than the capacity: the last
-- would be short for good).
local RISE = 0.25
local SHORT = 0.02
local SOON = 1 / 4

local function renew_ms(c, has, wants, old, s, learning)
	if learning or c.algorithm == 'static' or has < old or has >= wants or
	   (has <= old * (1 + RISE) and has >= s * (1 - SHORT)) then
		return c.refresh_ms
	end
	return math.ceil(c.refresh_ms * SOON)
end

-- One lease at @now: the work of rl_lease (below) on one resource, which
-- rl_lease_many does for each of its resources (at one @now: its text
-- kept in now_text).
local now_text = { -1, '' }

local function lease(keys, args, now)
	local host = args[1] -- text, as every argument of a call
	local wants, reported = num(args[2], 'wants'), num(args[3], 'has')
	local weight, want_floor = num(args[4], 'weight'), num(args[5], 'floor')
	if weight <= 0 then
		return fail('RLARG weight must be above 0')
	end
	if host == CACHE then
		return fail('RLARG host must not be empty')
	end
	local got = redis.call('HMGET', keys[3], CACHE, host)
	local was, old, qhas, quntil, old_exp, was_weight, floor, rsv =
		as_of(got[2], now)
	local c, k, free, counted = prepare(keys, got[1], rsv, host, wants,
					    weight, now)
	local learning = now < k.learn
	local s = share(c, wants, weight, k.level, k.ratio)
	if counted and not k.fresh then
		k = owe(k, c, now, share(c, was, was_weight, k.level, k.ratio), s)
	end
	floor = grant_floor(floor, want_floor, free, reported, learning)
	-- the share, as far as the capacity free allows, and no more than
	-- the host runs at while learning; at least the floor (>= 0)
	local has = s
	if free < has then
		has = free
	end
	if learning and reported < has then
		has = reported
	end
	if has < floor then
		has = floor
	end
	qhas, quntil = quarantine(has, qhas, quntil, old, old_exp, reported,
				  now)
	local lexp = now + c.lease_ms
	local r = counted and held(has, qhas, quntil, lexp, floor, now) or -1
	local rec = pack_fields(wants, has, qhas, quntil, lexp,
				lexp + c.hold_ms, weight, floor, r)
	-- one write, replicated as one command: the member, and the round
	-- when it counts the host anew, is new or is owed (a steady share
	-- leaves the round as it was)
	if counted and (r ~= counted or k.t == now or k.owed) then
		redis.call('HSET', keys[3], host, rec, CACHE,
			   cache_pack(k, k.rsum - counted + r))
	else
		redis.call('HSET', keys[3], host, rec)
	end
	if not counted or k.t == now then
		-- the expiry at rounds
		redis.call('PEXPIRE', keys[3],
			   math.ceil(c.lease_ms + c.hold_ms) * 2)
	end
	if now ~= now_text[1] then
		now_text[1], now_text[2] = now, string.format('%d', now)
	end
	return { fmt(has), fmt(floor), c.lease_ms,
		 renew_ms(c, has, wants, old, s, learning), c.hold_ms,
		 learning and 1 or 0, k.id, now_text[2], c.version }
end

-- rl_lease: KEYS as above; ARGV: host, wants, has (the rate the host runs
-- at now), weight, floor (the safe rate it asks to have reserved).
-- Returns { has, floor, lease_ms, refresh_ms, hold_ms, learning (0/1),
-- epoch, server time ms, config version }: the host may run at has for
-- lease_ms, then at floor for hold_ms more, measured from before it sent
-- the call, and renews after refresh_ms: the configuration's refresh, or
-- a quarter of it for a host on its way up (renew_ms()). O(1) above
-- SMALL members (prepare()).
local function rl_lease(keys, args)
	return lease(keys, args, now_ms())
end

-- rl_lease_many: the leases of several resources in one call, for
-- resources whose keys share a hash slot (their names begin with the same
-- hash tag, {api}.users and {api}.orders: a Redis Cluster refuses keys of
-- several slots in one call). KEYS: rl_lease's three of each resource in
-- turn; ARGV: rl_lease's five of each, in the same order. Returns one
-- reply per resource, in order: rl_lease's, or the error rl_lease would
-- have replied for it (RLNOCONF for a resource Redis does not know): an
-- error stays with its resource. One TIME for all: for a later resource
-- it is early by the time the call has run (a few ms for 128), which
-- only makes the others' leases, quarantines and memberships, and the
-- learning period, look as if they lasted longer (reserved longer: on
-- the safe side); its own new lease still ends later in Redis than on
-- its host, whose agent counts it from before it sent the call.
local function rl_lease_many(keys, args)
	local n = #keys / 3
	if n < 1 or n ~= math.floor(n) or #args ~= n * 5 then
		return fail('RLARG rl_lease_many takes 3 keys and 5 arguments per resource')
	end
	-- one table of keys and one of arguments for all: lease() keeps
	-- neither
	local now, out, k, a = now_ms(), {}, {}, {}
	for i = 0, n - 1 do
		for j = 1, 3 do
			k[j] = keys[i * 3 + j]
		end
		for j = 1, 5 do
			a[j] = args[i * 5 + j]
		end
		local ok, r = pcall(lease, k, a, now)
		if not ok and type(r) ~= 'table' then
			r = redis.error_reply('ERR ' .. tostring(r))
		end
		out[i + 1] = r
	end
	return out
end

-- rl_leave: KEYS as above; ARGV: host. A host that stopped gives back its
-- lease and floor at once (it set its limiter to 0 first), and owes the
-- resource a round (owed()), so that the others take its share within an
-- eighth of a refresh more. Returns 1 if it was a member.
local function rl_leave(keys, args)
	local host = tostring(args[1])
	if host == CACHE then
		return 0
	end
	local got = redis.call('HMGET', keys[3], CACHE, host)
	if not got[2] then
		return 0
	end
	local rsv = unpack_member(got[2]).rsv
	local k = got[1] and cache_read(got[1])
	if k and k.c then
		k = owed(k, k.c, now_ms())
	end
	if k and (rsv > 0 or k.owed) then
		redis.call('HSET', keys[3], CACHE,
			   cache_pack(k, k.rsum - math.max(rsv, 0)))
	end
	return redis.call('HDEL', keys[3], host)
end

-- rl_info: KEYS as above. The configuration (its fields, without
-- "packed"), then per member: host, wants, has, floor, lease left ms,
-- reserved now (read only).
local function rl_info(keys, args)
	local now = now_ms()
	local c = load_cfg(keys)
	if c == nil then
		return fail('RLNOCONF unknown resource')
	end
	local out = {}
	local raw = redis.call('HGETALL', keys[1])
	for i = 1, #raw, 2 do
		if raw[i] ~= 'packed' then
			out[#out + 1] = raw[i]
			out[#out + 1] = raw[i + 1]
		end
	end
	raw = redis.call('HGETALL', keys[3])
	for i = 1, #raw, 2 do
		local m = raw[i] ~= CACHE and unpack_member(raw[i + 1])
		if m and now < m.mexp then
			out[#out + 1] = raw[i]
			out[#out + 1] = string.format('wants=%s has=%s floor=%s left_ms=%d reserved=%s',
				fmt(m.wants), fmt(now < m.lexp and m.has or 0),
				fmt(m.floor), math.max(0, m.lexp - now),
				fmt(reserved(m, now)))
		end
	end
	return out
end

--------------------------------------------------------------------------
-- Batch mode: one exact token bucket, refilled from TIME.

local function bucket(keys, c, now)
	local b = redis.call('HMGET', keys[4], 'tokens', 't')
	local tokens, t = tonumber(b[1]), tonumber(b[2])
	if tokens == nil then
		-- new or lost: start empty, so a restart hands out no burst
		return 0, now
	end
	if now > t then
		tokens = math.min(c.burst, tokens + c.capacity * (now - t) / 1000)
	end
	return tokens, math.max(now, t)
end

local function store(keys, c, tokens, t)
	redis.call('HSET', keys[4], 'tokens', string.format('%.9f', tokens),
		   't', string.format('%.3f', t))
	-- an idle bucket is full after burst/capacity seconds: let it go
	redis.call('PEXPIRE', keys[4],
		   math.ceil(2000 * c.burst / c.capacity) + 1000)
end

-- rl_take: KEYS as above; ARGV: n, all (1: all or nothing). Takes up to n
-- whole tokens. Returns { granted, ms until n more would be there }.
local function rl_take(keys, args)
	local now = now_ms()
	local c = need_cfg(keys, 'batch')
	local n, all = num(args[1], 'n'), tostring(args[2]) == '1'
	local tokens, t = bucket(keys, c, now)
	local g = math.min(math.floor(n), math.floor(tokens + EPS))
	if g < 0 or (all and g < n) then
		g = 0
	end
	tokens = tokens - g
	store(keys, c, tokens, t)
	local wait = 0
	if tokens < n then
		wait = math.ceil((n - tokens) * 1000 / c.capacity)
	end
	return { g, wait }
end

-- rl_give: KEYS as above; ARGV: n. Tokens a host took and did not use
-- (on shutdown); the bucket still holds no more than its burst. Returns
-- the tokens taken back.
local function rl_give(keys, args)
	local now = now_ms()
	local c = need_cfg(keys, 'batch')
	local n = math.floor(num(args[1], 'n'))
	local tokens, t = bucket(keys, c, now)
	local back = math.min(n, math.max(0, math.floor(c.burst - tokens)))
	store(keys, c, tokens + back, t)
	return back
end

redis.register_function('rl_config', rl_config)
redis.register_function('rl_lease', rl_lease)
redis.register_function('rl_lease_many', rl_lease_many)
redis.register_function('rl_leave', rl_leave)
redis.register_function{ function_name = 'rl_info', callback = rl_info,
			 flags = { 'no-writes' } }
redis.register_function('rl_take', rl_take)
redis.register_function('rl_give', rl_give)
