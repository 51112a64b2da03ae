#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# README quick start, first command: install what is missing, build, demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build
bash scripts/demo.sh build
