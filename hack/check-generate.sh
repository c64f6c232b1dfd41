#!/usr/bin/env bash
# Fails when `make generate` changes the tree: generated code and CRDs must
# be committed as generated. Works in a dirty tree too, by comparing the
# tree before and after generation rather than against HEAD.
set -euo pipefail
cd "$(dirname "$0")/.."
snapshot() { { git status --porcelain=v1 -uall; git diff; git ls-files -o --exclude-standard -z | xargs -0r cat; } | sha256sum; }
before=$(snapshot)
make --no-print-directory generate >/dev/null
if [ "$(snapshot)" != "$before" ]; then
	echo "make generate changed the tree; commit what it generates:" >&2
	git status --short >&2
	exit 1
fi
echo "generated code is up to date"
