# Shell functions .ci/run uses (sourced; tests/test_ci.py runs them too).

# apt-get, waiting while another process holds the package manager's lock (an unattended upgrade, another
# checkout's CI): at most APT_LOCK_WAIT seconds (default 600), then its own error. apt-get install waits by itself
# (DPkg::Lock::Timeout); apt-get update does not (apt 2.6 fails at once on the package lists' lock), so a
# lock failure is tried again every APT_LOCK_POLL seconds. Any other failure is reported at once.
apt_get() {
  local wait=${APT_LOCK_WAIT:-600} deadline out status
  deadline=$((SECONDS + wait))
  while :; do
    status=0
    out=$(apt-get -o "DPkg::Lock::Timeout=$wait" "$@" 2>&1 >/dev/null) || status=$?
    if [ "$status" = 0 ]; then
      return 0
    fi
    if ! grep -qiE "could not get lock|unable to acquire the dpkg frontend lock|unable to lock" <<<"$out" \
       || [ "$SECONDS" -ge "$deadline" ]; then
      printf '%s\n' "$out" >&2
      return "$status"
    fi
    echo "apt-get $1: another process holds the package lock; waiting (at most ${wait} s)" >&2
    sleep "${APT_LOCK_POLL:-5}"
  done
}

# locked FOLDER COMMAND...: run COMMAND holding FOLDER's build lock (the file FOLDER.lock), waiting at most
# BUILD_LOCK_WAIT seconds (default 1800) while another checkout builds the same folder: the tool environments
# in /tmp are shared by every checkout on the machine, and two pip or npm installs into one folder at once
# leave it broken. The second finds the first's build done and uses it.
locked() {
  local lock="$1.lock"
  shift
  (
    flock -w "${BUILD_LOCK_WAIT:-1800}" 9 || { echo "gave up waiting for $lock" >&2; exit 1; }
    "$@"
  ) 9>"$lock"
}

# python_env VENV CHECK REQUIREMENTS: build VENV from REQUIREMENTS unless `python -c CHECK` succeeds in it (a
# build killed halfway fails the check and is built again), and install REQUIREMENTS again whenever the file
# changed since the last install into VENV (a pin added on main reaches an environment kept from an earlier run;
# VENV/.requirements.sha256 records it). Run it under `locked`.
python_env() {
  local want
  want=$(sha256sum "$3" | cut -d' ' -f1)
  if ! "$1/bin/python" -c "$2" >/dev/null 2>&1; then
    python -m venv "$1"
    rm -f "$1/.requirements.sha256"
  fi
  if [ "$(cat "$1/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
    "$1/bin/pip" install -q --disable-pip-version-check -r "$3"
    echo "$want" > "$1/.requirements.sha256"
  fi
}

# npm_env FOLDER PACKAGE VERSION: install PACKAGE@VERSION under FOLDER unless that version is there.
npm_env() {
  if [ "$(cat "$1/node_modules/$2/package.json" 2>/dev/null \
          | python -c 'import json,sys; print(json.load(sys.stdin)["version"])' 2>/dev/null)" != "$3" ]; then
    mkdir -p "$1"
    npm install --prefix "$1" --no-audit --no-fund --loglevel=error "$2@$3"
  fi
}
