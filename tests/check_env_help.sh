#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Fails when the libraries read a UROCE_* variable that `uroce --help`,
# the README's configuration table or docs/configuration.md (the details
# the README points to) does not list (issue 11: every variable with its
# meaning and default), or read one anywhere but util/config.c
# (which parses and validates each once) and the interposer (which links
# none of the library). The variables are the "UROCE_*" string literals of
# src/.
set -u
cd "$(dirname "$0")/.."
help=$(tools/uroce --help)
missing=0
vars=$(grep -rhoE --include='*.c' '"UROCE_[A-Z0-9_]+"' src | tr -d '"' | sort -u)
for v in $vars; do
	grep -qE "^ +$v " <<<"$help" || { echo "not in uroce --help: $v"; missing=$((missing + 1)); }
	grep -qF "\`$v\`" README.md || { echo "not in README.md: $v"; missing=$((missing + 1)); }
	grep -qF "**\`$v\`**" docs/configuration.md ||
		{ echo "not in docs/configuration.md: $v"; missing=$((missing + 1)); }
done
stray=$(grep -rnE --include='*.[ch]' 'getenv\(' src |
	grep -vE '^src/util/config\.c:|^src/util/rundir\.c:.*XDG_RUNTIME_DIR|^src/interpose/interpose\.c:.*UROCE_INTERPOSE')
if [[ -n $stray ]]; then
	echo "the environment read outside util/config.c:"
	echo "$stray"
	missing=$((missing + $(wc -l <<<"$stray")))
fi
echo "env: $(wc -w <<<"$vars") variables read, $missing missing from uroce --help, README.md or docs/configuration.md or read outside util/config.c"
((missing == 0))
