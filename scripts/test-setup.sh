#!/usr/bin/env bash
# What the test suite needs from the machine, set up: Debian's packages for the tests that drive
# real outside programs, and PostgreSQL and Redis on 127.0.0.1. `npm test` runs it first (the
# `pretest` script) and .ci/run calls it; docs/testing.md says which tests need what.
#
# Everything present and running: it says nothing and exits 0 at once. Something missing, as root:
# it installs the missing packages (apt-get) and starts PostgreSQL and Redis if they are not
# running; never restarts or reconfigures them. Something missing, not root: one line naming what
# and the command to run, exit 1.
#
#   bash scripts/test-setup.sh              check, and set up as root
#   bash scripts/test-setup.sh --versions   the same, then print the versions found (CI's log)
set -euo pipefail

PG_HOST=127.0.0.1 PG_PORT=5432 REDIS_PORT=6379
versions=false
[ "${1:-}" = --versions ] && versions=true

# The system python3 (Debian's packages), not a pyenv one that may come first on PATH.
PY=/usr/bin/python3

# Each requirement: a check, and the Debian package(s) that satisfy it.
#   chromium             test/e2e: the console in headless Chromium (test/support/browser.ts)
#   awscli python3-boto3 test/integration/aws-kms: the AWS CLI and boto3 against the API
#   gpgsm osslsigncode default-jdk-headless unzip libbc*-java
#                        test/integration/migration/producers-*, xdh-recipients: the real PKCS#7
#                        producers, and Java programs compiled against BouncyCastle
#   python3-jwcrypto     test/integration/migration/jwcrypto-outputs: a second JOSE implementation
#   python3-hvac         test/integration/vault-transit: hvac, a Vault client, against the Transit API
#   redis-server         test/integration/jobs, fanout: private Redis servers started by the tests
#   openssl              fixtures made by support/fixtures/pkcs7.ts and keystore tests
missing=()
need() { # need PACKAGES... -- CHECK...
  local packages=()
  while [ "$1" != -- ]; do packages+=("$1"); shift; done
  shift
  "$@" >/dev/null 2>&1 || missing+=("${packages[@]}")
}
has() { command -v "$1"; }
need chromium -- test -x /usr/bin/chromium
need awscli -- test -x /usr/bin/aws
need python3-boto3 -- "$PY" -c 'import boto3'
need python3-jwcrypto -- "$PY" -c 'import jwcrypto'
need python3-hvac -- "$PY" -c 'import hvac'
need gpgsm gpg-agent -- has gpgsm
need osslsigncode -- has osslsigncode
need default-jdk-headless -- test -x /usr/bin/javac -a -x /usr/bin/jarsigner
need unzip -- has unzip
need libbcprov-java -- test -f /usr/share/java/bcprov.jar
need libbcpkix-java -- test -f /usr/share/java/bcpkix.jar
need libbcutil-java -- test -f /usr/share/java/bcutil.jar
need openssl -- test -x /usr/bin/openssl
need redis-server redis-tools -- has redis-server
need postgresql postgresql-client -- has pg_isready
[ -d /etc/postgresql ] || missing+=(postgresql)

pg_up() { pg_isready -q -h "$PG_HOST" -p "$PG_PORT" 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; }
down=()
pg_up || down+=("PostgreSQL on $PG_HOST:$PG_PORT")
redis_up || down+=("Redis on 127.0.0.1:$REDIS_PORT")

if [ ${#missing[@]} -gt 0 ] || [ ${#down[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    what=()
    [ ${#missing[@]} -gt 0 ] && what+=("packages: $(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')")
    [ ${#down[@]} -gt 0 ] && what+=("not running: ${down[*]}")
    echo "keyward tests: the machine lacks what the suite needs (${what[*]}); run: sudo bash scripts/test-setup.sh" >&2
    exit 1
  fi
fi

if [ ${#missing[@]} -gt 0 ]; then
  mapfile -t packages < <(printf '%s\n' "${missing[@]}" | sort -u)
  echo "keyward tests: installing ${packages[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${packages[@]}"
fi

if ! pg_up; then
  echo "keyward tests: starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n1)" main start
fi
if ! redis_up; then
  echo "keyward tests: starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no
fi
for _ in $(seq 1 30); do
  pg_up && redis_up && break
  sleep 1
done
pg_up || { echo "keyward tests: PostgreSQL on $PG_HOST:$PG_PORT did not become ready in 30 s" >&2; exit 1; }
redis_up || { echo "keyward tests: Redis on 127.0.0.1:$REDIS_PORT did not become ready in 30 s" >&2; exit 1; }

if $versions; then
  pg_isready -h "$PG_HOST" -p "$PG_PORT"
  redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping
  /usr/bin/chromium --version
  /usr/bin/aws --version
  gpgsm --version | head -n1
  osslsigncode --version 2>&1 | head -n1
  /usr/bin/javac -version
  "$PY" -c 'import importlib.metadata as m; print("boto3", m.version("boto3"), "jwcrypto", m.version("jwcrypto"))'
  # producers-algorithms.test.ts runs a python3 with cryptography 42 or later (PKCS#7 with
  # RSASSA-PSS; Debian's 38 cannot), looked for on PATH, then in pyenv's shims
  # (test/fixtures/signature-producers.ts; KEYWARD_TEST_PYTHON names one).
  for py in python3 "$HOME/.pyenv/shims/python3"; do
    "$py" -c 'import cryptography, sys; print(sys.executable, "cryptography", cryptography.__version__)' 2>/dev/null || true
  done
fi
