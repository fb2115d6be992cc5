#!/usr/bin/env bash
# Install Debian's Chromium and its chromedriver for the review page's browser test
# (driven by Selenium with /usr/bin/chromedriver; no browser is downloaded by a test tool).
# Idempotent, non-interactive, quick when installed.
set -euo pipefail

if [[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]]; then
  echo "chromium: $(/usr/bin/chromium --version 2>/dev/null | head -n1) already installed"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq -o DPkg::Lock::Timeout=600 chromium chromium-driver >/dev/null 2>&1; then
  apt-get update -qq -o DPkg::Lock::Timeout=600
  apt-get install -y -qq -o DPkg::Lock::Timeout=600 chromium chromium-driver >/dev/null
fi
echo "chromium: installed $(/usr/bin/chromium --version 2>/dev/null | head -n1)"
