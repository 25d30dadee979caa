#!/bin/sh
# Installs wap-agent from this server and enrols the machine with a workspace:
#
#   export WAP_ENROLL_TOKEN=<token>; curl -fsSL <server>/install/agent.sh | sudo --preserve-env=WAP_ENROLL_TOKEN sh
#
# The token comes from the environment (or, when it is unset, from a prompt on the terminal),
# never from a command line. Every download is checked against the SHA-256 this server lists in
# /install/SHA256SUMS. Running it again changes nothing in place: the installed version is not
# reinstalled, an enrolled machine is not enrolled again (its state is never overwritten), an
# existing sshd drop-in is kept.
#
# Settings (environment): WAP_SERVER (default: the server this came from), WAP_AGENT_NAME (the
# daemon's name; default: the host name).
set -eu

WAP_SERVER="${WAP_SERVER:-@WAP_SERVER_URL@}"
STATE_DIR=/var/lib/wap-agent
SSHD_DROP_IN=/etc/ssh/sshd_config.d/wap.conf

say() { printf 'wap-agent install: %s\n' "$*" >&2; }
fail() {
  say "$*"
  exit 1
}

[ "$(id -u)" = 0 ] || fail "run as root: curl -fsSL $WAP_SERVER/install/agent.sh | sudo --preserve-env=WAP_ENROLL_TOKEN sh"
command -v curl >/dev/null 2>&1 || fail "curl is needed"
command -v sha256sum >/dev/null 2>&1 || fail "sha256sum (coreutils) is needed"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM

fetch() { curl -fsSL --retry 3 -o "$work/$1" "$WAP_SERVER/install/$1" || fail "could not download $WAP_SERVER/install/$1"; }

fetch SHA256SUMS
# A Debian package where dpkg is, else the npm package (Node.js 18.19 or later with npm).
file=""
if command -v dpkg >/dev/null 2>&1; then
  arch=$(dpkg --print-architecture)
  file=$(awk '{print $2}' "$work/SHA256SUMS" | grep -E "^wap-agent_[^_]+_($arch|all)\.deb$" | head -n 1 || true)
fi
if [ -z "$file" ]; then
  file=$(awk '{print $2}' "$work/SHA256SUMS" | grep -E '^wap-agent-[^/]+\.tgz$' | head -n 1 || true)
  [ -n "$file" ] || fail "$WAP_SERVER offers no wap-agent package"
  command -v npm >/dev/null 2>&1 || fail "no dpkg here: Node.js 18.19 or later with npm is needed for $file"
fi
version=$(printf '%s\n' "$file" | sed -E 's/^wap-agent[-_]([0-9][^_]*)(_.*\.deb|\.tgz)$/\1/')

installed=$(wap-agent --version 2>/dev/null || true)
if [ "$installed" = "$version" ]; then
  say "wap-agent $version is installed"
else
  fetch "$file"
  (cd "$work" && grep -E "^[0-9a-f]{64}  $file\$" SHA256SUMS | sha256sum -c --status -) ||
    fail "$file does not match its SHA-256 in $WAP_SERVER/install/SHA256SUMS: not installed"
  case "$file" in
  *.deb)
    if command -v apt-get >/dev/null 2>&1; then
      # apt installs what the package depends on (nodejs) from the machine's sources.
      apt-get install -y -q "$work/$file" >&2 || fail "apt-get could not install $file"
    else
      dpkg -i "$work/$file" >&2 || fail "dpkg could not install $file"
    fi
    ;;
  *)
    npm install -g --no-audit --no-fund "$work/$file" >&2 || fail "npm could not install $file"
    ;;
  esac
  say "wap-agent $version installed"
fi

if wap-agent status --state-dir "$STATE_DIR" >/dev/null 2>&1; then
  say "already enrolled (kept as it is: $STATE_DIR)"
else
  if [ -z "${WAP_ENROLL_TOKEN:-}" ]; then
    [ -r /dev/tty ] || fail "WAP_ENROLL_TOKEN is not set: copy the line from the console's enrolment instructions"
    printf 'Enrolment token: ' >/dev/tty
    stty -echo </dev/tty 2>/dev/null || true
    IFS= read -r WAP_ENROLL_TOKEN </dev/tty || true
    stty echo </dev/tty 2>/dev/null || true
    printf '\n' >/dev/tty
    [ -n "$WAP_ENROLL_TOKEN" ] || fail "no enrolment token given"
  fi
  export WAP_ENROLL_TOKEN
  if [ -n "${WAP_AGENT_NAME:-}" ]; then
    wap-agent enroll --server "$WAP_SERVER" --state-dir "$STATE_DIR" --name "$WAP_AGENT_NAME"
  else
    wap-agent enroll --server "$WAP_SERVER" --state-dir "$STATE_DIR"
  fi
fi

# sshd: a drop-in where sshd_config includes them, never an edit of sshd_config itself.
if [ -f "$SSHD_DROP_IN" ]; then
  say "$SSHD_DROP_IN is there (kept)"
elif grep -Eqs '^[[:space:]]*Include[[:space:]]+/etc/ssh/sshd_config\.d/\*\.conf' /etc/ssh/sshd_config; then
  wap-agent sshd-config >"$SSHD_DROP_IN.new"
  mv "$SSHD_DROP_IN.new" "$SSHD_DROP_IN"
  if command -v sshd >/dev/null 2>&1 && ! sshd -t >&2; then
    rm -f "$SSHD_DROP_IN"
    fail "sshd refused the configuration with $SSHD_DROP_IN: removed it again"
  fi
  say "wrote $SSHD_DROP_IN"
else
  say "sshd_config includes no sshd_config.d: add these lines to it, then reload sshd:"
  wap-agent sshd-config >&2
fi

# The unit: the Debian package has one; an npm install brings it in its package.
if [ ! -f /lib/systemd/system/wap-agent.service ] && [ ! -f /etc/systemd/system/wap-agent.service ]; then
  cp "$(npm root -g)/@wap/agent/wap-agent.service" /etc/systemd/system/wap-agent.service
fi
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload
  systemctl enable --now wap-agent.service
  systemctl reload ssh.service 2>/dev/null || systemctl reload sshd.service 2>/dev/null || true
  say "wap-agent runs (journalctl -u wap-agent); an administrator now accepts the machine in the console"
else
  say "no systemd here: start it with 'wap-agent run' under your service manager"
fi
