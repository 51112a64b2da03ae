#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Fails when the libraries read a UROCE_* variable that `uroce --help` or
# the README's configuration table does not list (issue 11: every variable
# with its meaning and default). The variables are the "UROCE_*" string
# literals of src/: util/config.c names each one it parses, the interposer
# its own.
set -u
cd "$(dirname "$0")/.."
help=$(tools/uroce --help)
missing=0
vars=$(grep -rhoE --include='*.c' '"UROCE_[A-Z0-9_]+"' src | tr -d '"' | sort -u)
for v in $vars; do
	grep -qE "^ +$v " <<<"$help" || { echo "not in uroce --help: $v"; missing=$((missing + 1)); }
	grep -qF "\`$v\`" README.md || { echo "not in README.md: $v"; missing=$((missing + 1)); }
done
echo "env: $(wc -w <<<"$vars") variables read, $missing missing from uroce --help or README.md"
((missing == 0))
