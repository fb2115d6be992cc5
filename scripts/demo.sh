#!/usr/bin/env bash
# The main job: a virtualenv with chatmem on SQLite, then the scripted demo conversation.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -e ".[sqlite]"
.venv/bin/chatmem demo "$@"
echo "(the chatmem command is in .venv/bin; from $PWD: .venv/bin/chatmem ls -l," \
  ".venv/bin/chatmem show demo-trip, .venv/bin/chatmem --help)"
