# Sourced by the scripts that run Python tools (interop.sh, schemathesis.sh):
#   python_venv NAME VENV REQUIREMENTS
# makes VENV (installing Debian's python3-venv with apt-get when venv is missing: root or sudo)
# and installs REQUIREMENTS into it, again only when the file changes. NAME prefixes messages.
python_venv() {
  local name=$1 venv=$2 requirements=$3
  command -v python3 >/dev/null || { echo "$name: python3 is required" >&2; return 1; }
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
      # Debian's python3 ships venv/ensurepip in python3-venv.
      rm -rf "$venv"
      local sudo_cmd=()
      if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "$name: need root or sudo to install python3-venv" >&2; return 1; }
        sudo_cmd=(sudo)
      fi
      echo "== installing python3-venv"
      "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
      "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv
      python3 -m venv "$venv"
    fi
  fi
  local stamp="$venv/.requirements.sha256" wanted
  wanted=$(sha256sum "$requirements" | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null || true)" != "$wanted" ]; then
    echo "== installing $requirements into $venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
    echo "$wanted" >"$stamp"
  fi
}
