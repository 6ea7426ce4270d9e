// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * kratelimit.cc - the native half of the Node.js package kratelimit: thin
 * calls over libratelimit on client fds, and a libuv poll handle that
 * tells JavaScript when a fd turns readable (a queued acquire finished).
 * Every call returns the library's -errno as a negative number rather
 * than throwing; index.js turns them into Error objects with a code.
 * The keyed calls make their ioctls here (RL_IOC_ACQUIRE_KEY, GET_KEY,
 * GET_KEYS), never blocking: a library without rl_acquire_key() and
 * friends serves as well; the queued request of a key is the library's
 * rl_submit_key(), built when its header declares it (RL_IOC_SUBMIT_KEY).
 * Argument types are checked by index.js; here only by node-addon-api.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#include <cmath>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <string>
#include <sys/ioctl.h>
#include <napi.h>
#include <uv.h>
#include <libratelimit.h>

namespace {

// A JS number that holds a u64 counter or a size (exact to 2^53).
Napi::Value U64(Napi::Env env, uint64_t v)
{
	return Napi::Number::New(env, static_cast<double>(v));
}

uint64_t ArgU64(const Napi::CallbackInfo &info, size_t i)
{
	double d = info[i].As<Napi::Number>().DoubleValue();

	return d <= 0 ? 0 : d >= 18446744073709551615.0 ? RL_DEADLINE_NONE :
		static_cast<uint64_t>(d);
}

int ArgFd(const Napi::CallbackInfo &info)
{
	return info[0].As<Napi::Number>().Int32Value();
}

Napi::Value Errno(Napi::Env env, int rc)
{
	return Napi::Number::New(env, rc);
}

// struct rl_config from a plain object of index.js's field names.
void ConfigFrom(Napi::Object o, struct rl_config *c)
{
	auto get = [&o](const char *k) -> uint64_t {
		Napi::Value v = o.Get(k);

		if (!v.IsNumber())
			return 0;
		double d = v.As<Napi::Number>().DoubleValue();
		return d <= 0 ? 0 : static_cast<uint64_t>(d);
	};
	*c = {};
	c->rate = get("rate");
	c->period_ns = get("periodNs");
	c->burst = get("burst");
	c->flags = static_cast<uint32_t>(get("flags"));
	c->catchup = static_cast<uint32_t>(get("catchup"));
	c->concurrency = get("concurrency");
	c->backlog = get("backlog");
	c->fairness = static_cast<uint32_t>(get("fairness"));
#ifdef RL_CONFIG_KEYED
	c->keys = get("keys");
#endif
}

Napi::Object ConfigTo(Napi::Env env, const struct rl_config *c)
{
	Napi::Object o = Napi::Object::New(env);

	o.Set("rate", U64(env, c->rate));
	o.Set("periodNs", U64(env, c->period_ns));
	o.Set("burst", U64(env, c->burst));
	o.Set("flags", U64(env, c->flags));
	o.Set("catchup", U64(env, c->catchup));
	o.Set("concurrency", U64(env, c->concurrency));
	o.Set("backlog", U64(env, c->backlog));
	o.Set("fairness", U64(env, c->fairness));
#ifdef RL_CONFIG_KEYED
	o.Set("keys", U64(env, c->keys));
#endif
	return o;
}

Napi::Value Open(const Napi::CallbackInfo &info)
{
	return Errno(info.Env(), rl_open(O_CLOEXEC));
}

Napi::Value Close(const Napi::CallbackInfo &info)
{
	return Errno(info.Env(), rl_close(ArgFd(info)));
}

// attach(fd, name, flags, mode, config | null)
Napi::Value Attach(const Napi::CallbackInfo &info)
{
	std::string name = info[1].As<Napi::String>().Utf8Value();
	struct rl_config cfg;
	const struct rl_config *cp = nullptr;

	if (info[4].IsObject()) {
		ConfigFrom(info[4].As<Napi::Object>(), &cfg);
		cp = &cfg;
	}
	return Errno(info.Env(), rl_attach(ArgFd(info), name.c_str(),
		info[2].As<Napi::Number>().Uint32Value(),
		info[3].As<Napi::Number>().Uint32Value(), cp));
}

Napi::Value Unlink(const Napi::CallbackInfo &info)
{
	std::string name = info[0].As<Napi::String>().Utf8Value();

	return Errno(info.Env(), rl_unlink(-1, name.c_str()));
}

Napi::Value SetConfig(const Napi::CallbackInfo &info)
{
	struct rl_config cfg;

	ConfigFrom(info[1].As<Napi::Object>(), &cfg);
	return Errno(info.Env(), rl_set_config(ArgFd(info), &cfg));
}

Napi::Value GetConfig(const Napi::CallbackInfo &info)
{
	struct rl_config cfg;
	int rc = rl_get_config(ArgFd(info), &cfg);

	return rc ? Errno(info.Env(), rc) : ConfigTo(info.Env(), &cfg);
}

Napi::Value ParseRate(const Napi::CallbackInfo &info)
{
	std::string spec = info[0].As<Napi::String>().Utf8Value();
	struct rl_config cfg;
	int rc = rl_parse_rate(spec.c_str(), &cfg);

	return rc ? Errno(info.Env(), rc) : ConfigTo(info.Env(), &cfg);
}

Napi::Value FormatRate(const Napi::CallbackInfo &info)
{
	struct rl_config cfg;
	char buf[RL_RATE_STRLEN];
	int rc;

	ConfigFrom(info[0].As<Napi::Object>(), &cfg);
	rc = rl_format_rate(&cfg, buf, sizeof(buf));
	if (rc < 0)
		return Errno(info.Env(), rc);
	return Napi::String::New(info.Env(), buf);
}

Napi::Value ParsePriority(const Napi::CallbackInfo &info)
{
	std::string s = info[0].As<Napi::String>().Utf8Value();

	return Errno(info.Env(), rl_parse_priority(s.c_str()));
}

// tryAcquire(fd, n): 0 granted; a positive number of ms (at least 1,
// Infinity when paused) until the tokens are predicted there; or -errno.
Napi::Value TryAcquire(const Napi::CallbackInfo &info)
{
	uint64_t ready = 0, now;
	int rc = rl_try_acquire(ArgFd(info), ArgU64(info, 1), &ready);

	if (rc != -EAGAIN)
		return Errno(info.Env(), rc);
	if (ready == RL_DEADLINE_NONE)
		return Napi::Number::New(info.Env(), INFINITY);
	now = rl_now_ns();
	return Napi::Number::New(info.Env(), ready > now ?
		static_cast<double>((ready - now + 999999) / 1000000) : 1);
}

Napi::Value Release(const Napi::CallbackInfo &info)
{
	return Errno(info.Env(), rl_release(ArgFd(info), ArgU64(info, 1)));
}

Napi::Value Refund(const Napi::CallbackInfo &info)
{
	return Errno(info.Env(), rl_refund(ArgFd(info), ArgU64(info, 1)));
}

Napi::Value GetStats(const Napi::CallbackInfo &info)
{
	Napi::Env env = info.Env();
	struct rl_stats st;
	int rc = rl_get_stats(ArgFd(info), &st);

	if (rc)
		return Errno(env, rc);
	Napi::Object o = Napi::Object::New(env);
	o.Set("granted", U64(env, st.granted));
	o.Set("requests", U64(env, st.requests));
	o.Set("immediate", U64(env, st.immediate));
	o.Set("waited", U64(env, st.waited));
	o.Set("waitNsTotal", U64(env, st.wait_ns_total));
	o.Set("waitNsMax", U64(env, st.wait_ns_max));
	o.Set("timeouts", U64(env, st.timeouts));
	o.Set("interrupted", U64(env, st.interrupted));
	o.Set("rejected", U64(env, st.rejected));
	o.Set("waiters", U64(env, st.waiters));
	o.Set("available", U64(env, st.available));
	o.Set("held", U64(env, st.held));
	o.Set("clients", U64(env, st.clients));
	o.Set("backlog", U64(env, st.backlog));
	o.Set("refunded", U64(env, st.refunded));
	return o;
}

Napi::Value GetFeatures(const Napi::CallbackInfo &info)
{
	struct rl_features f;
	int rc = rl_get_features(ArgFd(info), &f);

	return rc ? Errno(info.Env(), rc) : U64(info.Env(), f.flags);
}

Napi::Value Now(const Napi::CallbackInfo &info)
{
	return U64(info.Env(), rl_now_ns());
}

// Sets readyNs to @ready and ms to the ms (at least 1, Infinity for no
// time) from now to it, exact here where the u64 still is.
void SetReady(Napi::Env env, Napi::Object o, uint64_t ready)
{
	uint64_t now;

	o.Set("readyNs", U64(env, ready));
	if (ready == RL_DEADLINE_NONE) {
		o.Set("ms", Napi::Number::New(env, INFINITY));
		return;
	}
	now = rl_now_ns();
	o.Set("ms", Napi::Number::New(env, ready > now ?
		static_cast<double>((ready - now + 999999) / 1000000) : 1));
}

// The deadline of a timeout in ns from now (negative: none).
uint64_t ArgDeadline(const Napi::CallbackInfo &info, size_t i)
{
	double t = info[i].As<Napi::Number>().DoubleValue();

	return t < 0 ? RL_DEADLINE_NONE : rl_now_ns() + static_cast<uint64_t>(t);
}

#ifdef RL_IOC_SUBMIT
// What a submission @q returned @rc with: the ticket (> 0), -errno, or
// granted at once { readyNs, waitNs }; @refused (a key's ETIMEDOUT and
// ENOSPC) as { errno, readyNs, ms }.
Napi::Value Submitted(Napi::Env env, int rc, const struct rl_queued &q, bool refused)
{
	if ((rc && !refused) || (!rc && q.ticket))
		return rc ? Errno(env, rc) : U64(env, q.ticket);
	Napi::Object o = Napi::Object::New(env);
	if (rc) {
		o.Set("errno", Napi::Number::New(env, rc));
		SetReady(env, o, q.ready_ns);
		return o;
	}
	o.Set("readyNs", U64(env, q.ready_ns));
	o.Set("waitNs", U64(env, q.wait_ns));
	return o;
}

// submit(fd, count, timeoutNs (negative: none), priority, userData): as
// Submitted().
Napi::Value Submit(const Napi::CallbackInfo &info)
{
	struct rl_queued q = {};
	int rc;

	q.count = ArgU64(info, 1);
	q.deadline_ns = ArgDeadline(info, 2);
	q.priority = info[3].As<Napi::Number>().Uint32Value();
	q.user_data = ArgU64(info, 4);
	rc = rl_submit(ArgFd(info), &q);
	return Submitted(info.Env(), rc, q, false);
}

// collect(fd): { ticket, userData, result, count, waitNs, readyNs, and
// with a result (-errno) ms from now to readyNs }, or -errno (-EAGAIN:
// nothing finished).
Napi::Value Collect(const Napi::CallbackInfo &info)
{
	Napi::Env env = info.Env();
	struct rl_queued q = {};
	int rc = rl_collect(ArgFd(info), &q);

	if (rc)
		return Errno(env, rc);
	Napi::Object o = Napi::Object::New(env);
	o.Set("ticket", U64(env, q.ticket));
	o.Set("userData", U64(env, q.user_data));
	o.Set("result", Napi::Number::New(env, q.result));
	o.Set("count", U64(env, q.count));
	o.Set("waitNs", U64(env, q.wait_ns));
	if (q.result)
		SetReady(env, o, q.ready_ns);
	else
		o.Set("readyNs", U64(env, q.ready_ns));
	return o;
}

Napi::Value Cancel(const Napi::CallbackInfo &info)
{
	return Errno(info.Env(), rl_cancel(ArgFd(info), ArgU64(info, 1)));
}
#endif

#ifdef RL_IOC_ACQUIRE_KEY
// 0 or -errno of ioctl(@fd, @req, @arg).
int KeyIoctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) < 0 ? -errno : 0;
}

// The key of argument @i (a Uint8Array, index.js checks its length) into
// @key, its length into *@len; false when it is no key.
bool ArgKey(const Napi::CallbackInfo &info, size_t i, __u8 *key, __u32 *len)
{
	if (!info[i].IsTypedArray())
		return false;
	Napi::Uint8Array a = info[i].As<Napi::Uint8Array>();
	size_t n = a.ByteLength();

	if (!n || n > RL_KEY_MAX)
		return false;
	memcpy(key, a.Data(), n);
	*len = static_cast<__u32>(n);
	return true;
}

// tryAcquireKey(fd, key, n): 0 granted; -errno; or, refused (EAGAIN) or
// at the cap of keys (ENOSPC), { errno, readyNs, ms }: ms (at least 1,
// Infinity for no time) from now to the ready time, exact here where
// the u64 still is.
Napi::Value TryAcquireKey(const Napi::CallbackInfo &info)
{
	Napi::Env env = info.Env();
	struct rl_key_acquire req = {};
	int rc;

	if (!ArgKey(info, 1, req.key, &req.key_len))
		return Errno(env, -EINVAL);
	req.acquire.count = ArgU64(info, 2);
	req.acquire.deadline_ns = RL_DEADLINE_NONE;
	req.acquire.flags = RL_ACQUIRE_NONBLOCK;
	do
		rc = KeyIoctl(ArgFd(info), RL_IOC_ACQUIRE_KEY, &req);
	while (rc == -EINTR);
	if (rc != -EAGAIN && rc != -ENOSPC)
		return Errno(env, rc);
	Napi::Object o = Napi::Object::New(env);
	o.Set("errno", Napi::Number::New(env, rc));
	SetReady(env, o, req.acquire.ready_ns);
	return o;
}

#ifdef RL_IOC_SUBMIT_KEY
// submitKey(fd, key, n, timeoutNs (negative: none), userData): as
// submit(), the ticket (> 0), -errno, or granted at once { readyNs,
// waitNs }; refused (ETIMEDOUT) or at the cap of keys (ENOSPC), { errno,
// readyNs, ms } as tryAcquireKey().
Napi::Value SubmitKey(const Napi::CallbackInfo &info)
{
	struct rl_key_queued kq = {};
	int rc;

	if (!ArgKey(info, 1, kq.key, &kq.key_len))
		return Errno(info.Env(), -EINVAL);
	kq.queued.count = ArgU64(info, 2);
	kq.queued.deadline_ns = ArgDeadline(info, 3);
	kq.queued.user_data = ArgU64(info, 4);
	rc = rl_submit_key(ArgFd(info), &kq);
	return Submitted(info.Env(), rc, kq.queued, rc == -ETIMEDOUT || rc == -ENOSPC);
}
#endif

// getKey(fd, key): { available, fullNs, waiters, kept }, or -errno.
Napi::Value GetKey(const Napi::CallbackInfo &info)
{
	Napi::Env env = info.Env();
	struct rl_key_state st = {};
	int rc;

	if (!ArgKey(info, 1, st.key, &st.key_len))
		return Errno(env, -EINVAL);
	rc = KeyIoctl(ArgFd(info), RL_IOC_GET_KEY, &st);
	if (rc)
		return Errno(env, rc);
	Napi::Object o = Napi::Object::New(env);
	o.Set("available", U64(env, st.available));
	o.Set("fullNs", U64(env, st.full_ns));
	o.Set("waiters", U64(env, st.waiters));
	o.Set("kept", Napi::Boolean::New(env, st.kept != 0));
	return o;
}

// getKeys(fd): { keys, keysMax, created, evicted, refused, waiters }, or
// -errno.
Napi::Value GetKeys(const Napi::CallbackInfo &info)
{
	Napi::Env env = info.Env();
	struct rl_keys_stats st = {};
	int rc = KeyIoctl(ArgFd(info), RL_IOC_GET_KEYS, &st);

	if (rc)
		return Errno(env, rc);
	Napi::Object o = Napi::Object::New(env);
	o.Set("keys", U64(env, st.keys));
	o.Set("keysMax", U64(env, st.keys_max));
	o.Set("created", U64(env, st.created));
	o.Set("evicted", U64(env, st.evicted));
	o.Set("refused", U64(env, st.refused));
	o.Set("waiters", U64(env, st.waiters));
	return o;
}
#endif

/*
 * Poller: a uv_poll_t on one fd, started while requests are queued in
 * the kernel, which calls its JS function when the fd is readable. One per
 * limiter, whatever the number of waiters: no thread waits anywhere.
 */
class Poller : public Napi::ObjectWrap<Poller> {
public:
	static Napi::Function Init(Napi::Env env)
	{
		return DefineClass(env, "Poller", {
			InstanceMethod("start", &Poller::Start),
			InstanceMethod("stop", &Poller::Stop),
			InstanceMethod("close", &Poller::Close),
		});
	}

	// new Poller(fd, callback)
	Poller(const Napi::CallbackInfo &info) :
		Napi::ObjectWrap<Poller>(info),
		ctx_(info.Env(), "kratelimit.poll")
	{
		uv_loop_t *loop;

		cb_ = Napi::Persistent(info[1].As<Napi::Function>());
		napi_get_uv_event_loop(info.Env(), &loop);
		handle_ = new uv_poll_t;
		if (uv_poll_init(loop, handle_, ArgFd(info))) {
			delete handle_;
			handle_ = nullptr;
			Napi::Error::New(info.Env(), "uv_poll_init failed")
				.ThrowAsJavaScriptException();
			return;
		}
		handle_->data = this;
	}

	~Poller() override
	{
		Detach();
	}

private:
	static void OnEvent(uv_poll_t *h, int status, int events)
	{
		Poller *p = static_cast<Poller *>(h->data);

		(void)status;
		(void)events;
		if (!p)
			return;
		Napi::Env env = p->cb_.Env();
		Napi::HandleScope scope(env);
		// MakeCallback: the promises it settles run their reactions
		// (microtasks) before control goes back to libuv.
		p->cb_.MakeCallback(env.Global(), {}, p->ctx_);
		// What it threw is uncaught, as from any other callback.
		if (env.IsExceptionPending())
			napi_fatal_exception(env, env.GetAndClearPendingException().Value());
	}

	// The handle is freed in its close callback, which may come after
	// this object is gone: it no longer points here.
	void Detach()
	{
		if (!handle_)
			return;
		handle_->data = nullptr;
		uv_close(reinterpret_cast<uv_handle_t *>(handle_),
			 [](uv_handle_t *h) { delete reinterpret_cast<uv_poll_t *>(h); });
		handle_ = nullptr;
	}

	Napi::Value Start(const Napi::CallbackInfo &info)
	{
		int rc = handle_ ? uv_poll_start(handle_, UV_READABLE, OnEvent) : UV_EBADF;

		return Napi::Number::New(info.Env(), rc);
	}

	Napi::Value Stop(const Napi::CallbackInfo &info)
	{
		if (handle_)
			uv_poll_stop(handle_);
		return info.Env().Undefined();
	}

	Napi::Value Close(const Napi::CallbackInfo &info)
	{
		Detach();
		return info.Env().Undefined();
	}

	Napi::FunctionReference cb_;
	Napi::AsyncContext ctx_;
	uv_poll_t *handle_ = nullptr;
};

Napi::Object Init(Napi::Env env, Napi::Object exports)
{
	struct {
		const char *name;
		Napi::Value (*fn)(const Napi::CallbackInfo &);
	} fns[] = {
		{ "open", Open }, { "close", Close }, { "attach", Attach },
		{ "unlink", Unlink }, { "setConfig", SetConfig },
		{ "getConfig", GetConfig }, { "parseRate", ParseRate },
		{ "formatRate", FormatRate }, { "parsePriority", ParsePriority },
		{ "tryAcquire", TryAcquire }, { "release", Release },
		{ "refund", Refund }, { "getStats", GetStats },
		{ "getFeatures", GetFeatures }, { "now", Now },
#ifdef RL_IOC_SUBMIT
		{ "submit", Submit }, { "collect", Collect },
		{ "cancel", Cancel },
#endif
#ifdef RL_IOC_ACQUIRE_KEY
		{ "tryAcquireKey", TryAcquireKey }, { "getKey", GetKey },
		{ "getKeys", GetKeys },
#endif
#ifdef RL_IOC_SUBMIT_KEY
		{ "submitKey", SubmitKey },
#endif
	};

	for (const auto &f : fns)
		exports.Set(f.name, Napi::Function::New(env, f.fn, f.name));
	exports.Set("Poller", Poller::Init(env));
	exports.Set("ATTACH_CREATE", U64(env, RL_ATTACH_CREATE));
	exports.Set("ATTACH_EXCL", U64(env, RL_ATTACH_EXCL));
	exports.Set("ATTACH_PERSIST", U64(env, RL_ATTACH_PERSIST));
#ifdef RL_IOC_SUBMIT
	exports.Set("QUEUED_MAX", U64(env, RL_QUEUED_MAX));
	exports.Set("FEATURE_QUEUED", U64(env, RL_FEATURE_QUEUED));
#endif
#ifdef RL_IOC_ACQUIRE_KEY
	exports.Set("CONFIG_KEYED", U64(env, RL_CONFIG_KEYED));
	exports.Set("FEATURE_KEYED", U64(env, RL_FEATURE_KEYED));
	exports.Set("KEY_MAX", U64(env, RL_KEY_MAX));
#endif
#ifdef RL_CONFIG_FAIR_PER_USER
	exports.Set("CONFIG_FAIR_PER_USER", U64(env, RL_CONFIG_FAIR_PER_USER));
#endif
	return exports;
}

} // namespace

NODE_API_MODULE(kratelimit, Init)
