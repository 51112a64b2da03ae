#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Builds uroce into build/ (or $1). The libraries land in <build>/lib.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
cmake -S . -B "$B" -G Ninja -DUROCE_WERROR=ON >/dev/null
ninja -C "$B"
