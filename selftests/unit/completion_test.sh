#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The bash completions, dist/NAME.bash-completion, on the build machine: a
# host unit test of make check, which runs it from the top of the tree
# (the Makefile installs it as build/unit/completion_test; the tools are
# taken from build/tools, or RL_TOOLS_DIR).
#
# Each tool (the programs of build/tools, and rlsyncd) has a completion
# that registers itself; every command that "rlctl --help" lists, and
# every option it lists for that command, is completed (so adding one
# without its completion fails here); every option of the --help of
# rlpace, rlpipe and rlrun, and every long option of rlsyncd's table, is
# completed; and a few words: "rlctl ex" gives export, "rlpace -P " the
# priorities. Run with Debian's bash_completion when it is installed,
# else with small stand-ins for the helpers the completions call.
set -u

tools=${RL_TOOLS_DIR:-build/tools}
n=0
fails=0

ok()
{
	n=$((n + 1))
	echo "ok $n - $1"
}

not_ok()
{
	n=$((n + 1))
	fails=$((fails + 1))
	echo "not ok $n - $1"
}

if [ -r /usr/share/bash-completion/bash_completion ]; then
	# shellcheck disable=SC1091 # Debian's, when installed
	. /usr/share/bash-completion/bash_completion
else
	# shellcheck disable=SC2034 # set for the completion functions
	_init_completion()
	{
		words=("${COMP_WORDS[@]}")
		cword=$COMP_CWORD
		cur=${COMP_WORDS[COMP_CWORD]}
		prev=${COMP_WORDS[COMP_CWORD - 1]}
	}
	_filedir() { COMPREPLY=(); }
	_command_offset() { COMPREPLY=(COMMAND); }
fi

# complete TOOL WORD... : the completions of the last WORD (may be ""),
# one a line, sorted.
complete_words()
{
	local tool=$1 fn
	shift
	fn=$(complete -p "$tool" 2>/dev/null | sed -n 's/.* -F \([^ ]*\) .*/\1/p')
	[ -n "$fn" ] || return 1
	COMP_WORDS=("$tool" "$@")
	COMP_CWORD=$#
	COMP_LINE="${COMP_WORDS[*]}"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	# as in an interactive shell: without set -u
	set +u
	"$fn" "$tool" "${COMP_WORDS[COMP_CWORD]}" \
		"${COMP_WORDS[COMP_CWORD - 1]}" 2>/dev/null
	set -u
	printf '%s\n' "${COMPREPLY[@]}" | sort -u
}

# expect DESC WANT... -- TOOL WORD...: the completions hold each WANT.
expect()
{
	local desc=$1 want=() got missing=() w
	shift
	while [ "$1" != -- ]; do
		want+=("$1")
		shift
	done
	shift
	got=$(complete_words "$@")
	for w in "${want[@]}"; do
		grep -qxF -- "$w" <<<"$got" || missing+=("$w")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		ok "$desc"
	else
		not_ok "$desc: missing ${missing[*]} (got: $(tr '\n' ' ' <<<"$got"))"
	fi
}

# The options (-x, --xx) in the text on stdin.
options_of()
{
	grep -o -- '\(^\|[][ (|,]\)--\?[a-zA-Z][a-z-]*' | sed 's/^[][ (|,]//' |
		sort -u
}

names=("$tools"/rl*)
list=()
for t in "${names[@]}"; do
	[ -x "$t" ] && [ "${t##*/}" != rlbench ] && list+=("${t##*/}")
done
if [ ${#list[@]} -eq 0 ]; then
	echo "completion: no tools in $tools (make tools first)" >&2
	exit 1
fi
list+=(rlsyncd)

for t in "${list[@]}"; do
	f=dist/$t.bash-completion
	# shellcheck disable=SC1090 # each tool's
	if [ -r "$f" ] && . "$f" && complete -p "$t" >/dev/null 2>&1; then
		ok "$t: $f registers a completion"
	else
		not_ok "$t: no completion ($f)"
	fi
done

# rlctl: its commands and their options, from its --help.
help=$("$tools/rlctl" --help)
cmds=$(sed -n 's/^  \([a-z][a-z]*\)\( .*\)\{0,1\}$/\1/p' <<<"$help" | sort -u)
if [ -z "$cmds" ]; then
	not_ok "rlctl --help lists no command"
fi
# shellcheck disable=SC2086 # one word each
expect "rlctl: every command of --help" $cmds -- rlctl ""
# shellcheck disable=SC2046 # one word each
expect "rlctl: its options" $(sed -n '/^  -/p' <<<"$help" | options_of) \
	-- rlctl -
for c in $cmds; do
	# the lines of command c: its own and their continuations
	opts=$(awk -v c="$c" '
		/^  [a-z-]/ { on = ($1 == c) }
		on' <<<"$help" | options_of)
	[ -n "$opts" ] || continue
	# shellcheck disable=SC2086 # one word each
	expect "rlctl $c: every option of --help" $opts -- rlctl "$c" x -
done
expect "rlctl ex: export" export -- rlctl ex
expect "rlctl --json s: set, show" set show -- rlctl --json s
expect "rlctl create: --transient" --transient -- rlctl create api 1/s --tr
expect "rlctl apply: --dry-run" --dry-run -- rlctl apply --d

# rlpace, rlpipe, rlrun: every option of their --help.
for t in rlpace rlpipe rlrun; do
	[ -x "$tools/$t" ] || continue
	opts=$("$tools/$t" --help |
		sed -n '/^  -/p' | options_of)
	# shellcheck disable=SC2086 # one word each
	expect "$t: every option of --help" $opts -- $t -
done
expect "rlpace -P: the priorities" low mid high user -- rlpace -P ""
expect "rlrun -P: the priorities" low mid high user -- rlrun -n x -P ""
expect "rlrun: the command after --" COMMAND -- rlrun -n x -- ""

# rlsyncd: every long option of its table, and some values.
opts=$(sed -n '/longopts\[\] = {/,/^};/s/^\t{ "\([a-z-]*\)",.*/--\1/p' \
	tools/global/rlsyncd.c)
[ -n "$opts" ] || not_ok "rlsyncd: no options found in tools/global/rlsyncd.c"
# shellcheck disable=SC2086 # one word each
expect "rlsyncd: every long option" $opts --version -- rlsyncd --
expect "rlsyncd --mode: lease, batch" lease batch -- rlsyncd --mode ""
expect "rlsyncd -a: the algorithms" fair proportional static -- rlsyncd -a ""

echo "1..$n"
[ "$fails" -eq 0 ]
