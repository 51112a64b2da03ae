#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Fails when the library reads a UROCE_* variable that `uroce --help` does
# not list (issue 11: every variable with its meaning and default).
set -u
cd "$(dirname "$0")/.."
help=$(tools/uroce --help)
missing=0
vars=$(grep -rhoE 'getenv\("UROCE_[A-Z0-9_]+"\)|env_true\("UROCE_[A-Z0-9_]+"\)' src |
	grep -oE 'UROCE_[A-Z0-9_]+' | sort -u)
for v in $vars; do
	grep -qE "^ +$v " <<<"$help" || { echo "not in uroce --help: $v"; missing=$((missing + 1)); }
done
echo "env: $(wc -w <<<"$vars") variables read, $missing missing from uroce --help"
((missing == 0))
