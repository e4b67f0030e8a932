#!/usr/bin/env bash
# The repository alone is the product (issue 38): clone this checkout's HEAD into a private
# temporary folder with nothing beside it (in particular no ../shared) and run the README's
# first ```sh block there, as written, except the `make` lines (this checkout's .venv is
# lent to the copy instead). `--demo` also runs `make demo` in the copy (about 10 s; the lent
# .venv's stamp is taken as up to date) and fails on a traceback in its output. Every file the
# commands write, temporary ones included, stays in that folder, which is removed on exit.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/twill-fresh.XXXXXX")"
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
git clone --quiet --no-hardlinks "$src" "$work/repo"
ln -s "$src/.venv" "$work/repo/.venv"
mkdir "$work/tmp"
cd "$work/repo"
test ! -e ../shared
export TMPDIR="$work/tmp" PYTHONPATH="$work/repo/src" MPLCONFIGDIR="$work/tmp"
# the first ```sh block of the README, without its `make` lines
block="$(awk '/^```sh$/ && !n {n=1; next} n && /^```$/ {exit} n' README.md | grep -v '^make ')"
test -n "$block"
printf '%s\n' "$block"
bash -euo pipefail -c "$block" >"$work/out.txt" 2>&1 || { cat "$work/out.txt"; exit 1; }
echo "README first block: ok in a fresh clone ($(wc -l <"$work/out.txt") lines of output)"
if [ "${1:-}" = "--demo" ]; then
  make --no-print-directory -o .venv/.installed demo >"$work/demo.txt" 2>&1 || { cat "$work/demo.txt"; exit 1; }
  if grep -q Traceback "$work/demo.txt"; then cat "$work/demo.txt"; exit 1; fi
  echo "make demo: ok in a fresh clone ($(grep -c '^--- ' "$work/demo.txt") parts)"
fi
