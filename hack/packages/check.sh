#!/usr/bin/env bash
# Fails when a program or file that the entry points need comes from a
# Debian package that hack/packages/host.txt does not cover (the package, or
# one that a listed or Essential package depends on, as apt would install
# it), and when the gateway image's list, cluster/images/gateway/packages.txt,
# does not cover what the gateway pod runs. Run by make test after make
# packages, on the machine whose dpkg database it reads.
#
# What the entry points need is found, not listed (see words and modules
# below): each found name that is a file some installed package ships is a
# need; a name that no package ships (a program this repository builds, a
# config key) is none. hack/packages/check.sh -v prints the needs.
set -euo pipefail
cd "$(dirname "$0")/../.."
verbose=false
[ "${1:-}" = -v ] && verbose=true

# files PATTERN...: the tracked files matching the patterns.
files() { git ls-files -- "$@"; }
mapfile -t scripts < <( { files '*.sh'; git ls-files -z | xargs -0 awk 'FNR == 1 && /^#!.*sh$/ {print FILENAME} {nextfile}'; } | sort -u)

# What the entry points run and name: "FILE WORD". In the shell scripts and
# the Makefile (comments left out): the word that starts a command (also
# after exec, env, xargs, nsenter's --, ip netns exec, command -v and this
# repository's start, wait_for and in_ns), as cmd:WORD; an absolute path;
# and every word, as plugin:WORD, for the CNI, charon and uwsgi plugins that
# the scripts name in lists. In the Go code of the harness, the tests and the
# agent: the program a call of exec.Command, LookPath or a command helper
# names, and every absolute path. Shell functions and builtins are none.
start='(^|[|;&({`!]|\$\(|\b(then|do|else|exec|command -v|xargs( -[a-zA-Z0-9]+)*|env( -[a-z]+)*( [A-Z_]+=[^ ]*)*|nice( -n [0-9]+)?|setsid|flock [^ ]+|timeout [^ ]+|-- |ip netns exec [^ ]+|start [^ ]+|wait_for "[^"]*" [0-9]+|in_ns [^ ]+|-c '"'"'|trap '"'"')|^[A-Z_]+=[^ ]* )'
words() {
	local f funcs text
	funcs=" $(compgen -b -k | tr '\n' ' ') $(grep -hoE '^[[:space:]]*[a-z_][a-z0-9_-]*\(\)' "${scripts[@]}" | tr -d '() \t' | tr '\n' ' ') "
	for f in "${scripts[@]}" Makefile; do
		text=$(sed -E 's/(^|[[:space:]])#.*//; s/^\t+//' "$f")
		# In the Makefile, a recipe's @ and - are make's.
		[ "$f" = Makefile ] && text=$(sed -E 's/^[@-]+//' <<<"$text")
		grep -oE "${start}[[:space:]]*[a-z][a-z0-9._+-]*(\$|[[:space:];)|&])" <<<"$text" |
			grep -oE '[a-z][a-z0-9._+-]*[[:space:];)|&]?$' | tr -d ' \t;)|&' |
			while read -r w; do [[ $funcs == *" $w "* ]] || echo "$f cmd:$w"; done
		grep -oE '[A-Za-z0-9_.+-]+' <<<"$text" | sed "s|^|$f plugin:|"
		grep -oE '(^|[^A-Za-z0-9_.$}-])/[a-z][A-Za-z0-9_./+-]*' <<<"$text" | grep -oE '/.*' | sed "s|^|$f |"
	done
	for f in $(files 'cluster/*.go' 'test/*.go' 'hack/*.go' 'internal/agent/*.go'); do
		grep -oE '(ommand|LookPath)(Context)?\((ctx, )?"[a-z][a-z0-9._+-]*"' "$f" | grep -oE '"[^"]+"' | tr -d '"' | sed "s|^|$f cmd:|"
		grep -oE '"/[a-z][A-Za-z0-9_./+-]*"' "$f" | tr -d '"' | sed "s|^|$f |"
	done
}

# The Python modules the scripts import: "FILE python3:MODULE" (comments
# left out: a comment's "from apt's lists" imports nothing).
modules() {
	for f in $(files '*.py') "${scripts[@]}"; do
		sed -E 's/(^|[[:space:]])#.*//' "$f" | grep -oE '(^|[;"'\'' ])(import|from) [A-Za-z0-9_]+' | awk -v f="$f" '{print f, "python3:" $NF}'
	done
}

# candidates WORD sets paths to the paths a word can name.
candidates() {
	local w=${1#*:}
	case $1 in
	python3:*) paths=(/usr/lib/python3/dist-packages/"$w"/__init__.py /usr/lib/python3/dist-packages/"$w".py
		/usr/lib/python3.*/"$w"/__init__.py /usr/lib/python3.*/"$w".py) ;;
	cmd:*) paths=(/usr/bin/"$w" /usr/sbin/"$w") ;;
	plugin:*) paths=(/usr/lib/cni/"$w" /usr/lib/ipsec/plugins/libstrongswan-"$w".so /usr/lib/uwsgi/plugins/"$w"_plugin.so) ;;
	*) paths=("$1") ;;
	esac
}

# owners: "PATH PACKAGE" for every file of every installed package, also
# with /usr merged (/bin/ip is /usr/bin/ip).
owners() {
	awk '{p = FILENAME; sub(/.*\//, "", p); sub(/\.list$/, "", p); sub(/:.*/, "", p)
		print $0, p; if ($0 ~ /^\/(bin|sbin|lib)\//) print "/usr" $0, p}' /var/lib/dpkg/info/*.list
}

# covered LIST: the packages that installing LIST and the Essential packages
# installs (apt's closure over Depends and Pre-Depends).
covered() {
	local want
	want=$(sed 's/#.*//' "$1" | awk 'NF {print $1}'; dpkg-query -W -f '${Package} ${Essential}\n' | awk '$2 == "yes" {print $1}')
	# shellcheck disable=SC2086 # one word a package
	{ echo $want | tr ' ' '\n'; apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
		--no-breaks --no-replaces --no-enhances $want | awk '/^ *(Pre)?Depends: [^<]/ {print $NF} /^[a-z0-9]/ {print $1}'; } | sort -u
}

declare -A owner
while read -r path pkg; do owner[$path]=$pkg; done < <(owners)

# check NAME LIST NEEDS: fails for each need ("WHERE WHAT") whose files come
# from a package LIST does not cover.
check() {
	local name=$1 list=$2 ok=0 where what path p real paths
	declare -A cov=()
	for p in $(covered "$list"); do cov[$p]=1; done
	while read -r where what; do
		candidates "$what"
		for path in "${paths[@]}"; do
			[ -d "$path" ] && continue
			p=${owner[$path]:-}
			if [ -z "$p" ] && [ -e "$path" ]; then
				real=$(readlink -f "$path") # an alternative (awk) or a link
				p=${owner[$real]:-}
			fi
			[ -n "$p" ] || continue
			$verbose && echo "$name: $where needs $path ($p)"
			if [ -z "${cov[$p]:-}" ]; then
				echo "error: $where needs $path, from package $p, which $list does not cover: add $p" >&2
				ok=1
			fi
		done
	done
	return $ok
}

status=0
{ words; modules; } | sort -u -k2,2 | check host hack/packages/host.txt || status=1

# The gateway image: what its pod runs (cluster/images/gateway), from the
# one list that hack/images.sh and the Dockerfile's gateway target both
# install.
image=cluster/images/gateway/packages.txt
for f in hack/images.sh cluster/images/Dockerfile; do
	grep -q "$image" "$f" || { echo "error: $f does not install $image" >&2; status=1; }
done
printf 'gateway %s\n' /usr/lib/ipsec/charon /usr/sbin/swanctl /usr/sbin/nft /usr/bin/ip /bin/sh \
	/usr/lib/ipsec/plugins/libstrongswan-{vici,openssl,kernel-libipsec}.so | check image "$image" || status=1
exit $status
