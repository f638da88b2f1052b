# Sourced by the scripts that install Debian packages. SUDO is empty as root.
# apt_get runs apt-get without questions and, while another apt or dpkg holds
# its lock (a cloud machine's first boot runs unattended-upgrades), waits for it
# up to KB_APT_LOCK_WAIT seconds (600) instead of failing at once.
if [[ $(id -u) -eq 0 ]]; then SUDO=""; else SUDO="sudo"; fi

apt_get() {
  local wait=${KB_APT_LOCK_WAIT:-600} out status said=""
  local deadline=$((SECONDS + wait))
  while :; do
    # DPkg::Lock::Timeout waits for dpkg's lock only; `update` takes the package
    # lists' lock, which apt-get gives up on at once: that wait is this loop's.
    status=0
    out=$($SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$wait" "$@" 2>&1) || status=$?
    if [[ $status -eq 0 || "$out" != *"Could not get lock"* ]] || ((SECONDS >= deadline)); then
      [[ -z "$out" ]] || printf '%s\n' "$out" >&2
      return "$status"
    fi
    if [[ -z "$said" ]]; then
      printf 'apt: another apt or dpkg is running; waiting up to %ss for it (KB_APT_LOCK_WAIT)\n' "$wait" >&2
      said=1
    fi
    sleep 2
  done
}
