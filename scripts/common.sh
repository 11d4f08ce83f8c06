# shellcheck shell=bash
# Shared settings for qhca scripts. Source it; do not run it.
#
# Pinned platform (see docs/platform.md; how it is built: docs/building.md):
#   QEMU      10.0.x  Debian source package (newest 10.0.x in trixie)
#   kernel    6.12    Debian bookworm (-backports / -security) linux-image, extracted
#   rdma-core 56.1    Debian trixie upstream tarball, configured out of tree;
#                     the provider, its host tests and the guests' verbs user
#                     space are all 56.1 (the archive no longer serves 44.0's
#                     source). Only scripts/build-debs also builds a provider
#                     for Debian 12's rdma-core 44, from bookworm's binaries.

set -euo pipefail

QHCA_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${QHCA_BUILD:-$QHCA_TOP/build}
DEBS=$BUILD/debs
SRC=$BUILD/src
mkdir -p "$BUILD" "$DEBS" "$SRC"

QEMU_SERIES=10.0
RDMA_CORE_VERSION=56.1
KERNEL_SERIES=6.12

# Debian's meson lives under /usr/lib/python3; a pyenv python3 early in PATH
# cannot import it.
PYTHON=/usr/bin/python3

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# duration SECONDS: 45s, 3m20s, 1h02m
duration() {
	local s=$1
	if [ "$s" -lt 60 ]; then echo "${s}s"
	elif [ "$s" -lt 3600 ]; then printf '%dm%02ds\n' $((s / 60)) $((s % 60))
	else printf '%dh%02dm\n' $((s / 3600)) $((s % 3600 / 60)); fi
}

# run_step LABEL LOG CMD...: run CMD with its output in LOG (its exit
# status is run_step's) and, every QHCA_PROGRESS_SECONDS (default 30)
# while it runs, say how it goes on stderr:
#   [build] qemu: building, 3m20s, log build/qemu-build.log, 812/1703 steps
# (the steps: the newest "[N/M]" line of ninja in the log, if any)
run_step() {
	local label=$1 logf=$2 every=${QHCA_PROGRESS_SECONDS:-30} start pid next steps
	shift 2
	start=$SECONDS
	next=$((start + every))
	"$@" >"$logf" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		[ $SECONDS -ge $next ] || continue
		steps=$(tail -c 8192 "$logf" 2>/dev/null | tr '\r' '\n' |
			sed -n 's/^\[\([0-9]*\/[0-9]*\)\] .*/\1/p' | tail -n 1) || steps=
		log "$label, $(duration $((SECONDS - start))), log $logf${steps:+, $steps steps}"
		next=$((next + every))
	done
	wait "$pid"
}

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

APT_UPDATED=$BUILD/.apt-updated

# --- which host: only Debian 12 and 13 are tested ---------------------------
# The scripts install their build dependencies with apt and add Debian's
# bookworm/trixie (deb-src) and bookworm-backports sources to the host's apt
# (apt_sources). That is right on Debian 12 and 13 only: on another
# distribution (Ubuntu, Fedora, ...) nothing is installed or added to apt;
# the user gets the list of packages to install by hand (docs/building.md,
# "Other hosts") and QHCA_NO_APT=1 makes the scripts trust that they are
# there. On a Debian release other than 12/13 the sources are not added
# unless QHCA_ANY_DEBIAN=1. For the tests: QHCA_OS_RELEASE and
# QHCA_DEBIAN_VERSION name other files than /etc/os-release and
# /etc/debian_version.

# os_release_field NAME: NAME's value in the os-release file, unquoted
os_release_field() {
	sed -n "s/^$1=//p" "${QHCA_OS_RELEASE:-/etc/os-release}" 2>/dev/null |
		head -n 1 | tr -d "\"'"
}

# host_problem: why this is not a Debian host apt can install on (one
# line on stdout), nothing when it is one
host_problem() {
	local dv=${QHCA_DEBIAN_VERSION:-/etc/debian_version} id
	id=$(os_release_field ID)
	if [ ! -f "$dv" ]; then
		echo "not a Debian host (no $dv; ID=${id:-unknown} in ${QHCA_OS_RELEASE:-/etc/os-release})"
	elif ! command -v apt-get >/dev/null 2>&1; then
		echo "no apt-get on this host"
	elif [ "$id" != debian ]; then
		echo "not Debian but ${id:-an unknown distribution} (ID=${id:-unset} in ${QHCA_OS_RELEASE:-/etc/os-release})"
	fi
}

# release_problem: a Debian host whose release is not 12 or 13 (one line),
# nothing for 12 and 13 or with QHCA_ANY_DEBIAN=1
release_problem() {
	local v
	v=$(os_release_field VERSION_ID)
	case $v in
	12 | 13) ;;
	*) [ "${QHCA_ANY_DEBIAN:-}" = 1 ] ||
		echo "Debian ${v:-without a VERSION_ID (testing or unstable)} is not Debian 12 or 13, the releases the scripts are tested on" ;;
	esac
}

# no_apt_hint PKG...: what to do instead of apt, for die()
no_apt_hint() {
	echo "install these by hand (Debian package names; the Fedora and Ubuntu ones are in docs/building.md, \"Other hosts\"): ${*%%/*}; then run again with QHCA_NO_APT=1 (nothing is installed then; the scripts trust that the packages are there). Only Debian 12 and 13 hosts are tested"
}

# The Debian mirror this machine's apt uses, asked of apt (the repository
# of its first Debian "main" index), e.g. http://deb.debian.org/debian, so
# that the sources we add and the private apt roots of scripts/fetch use
# the configured mirror. QHCA_DEBIAN_MIRROR overrides; deb.debian.org when
# apt names no Debian repository.
debian_mirror() {
	local m=${QHCA_DEBIAN_MIRROR:-}
	if [ -z "$m" ]; then
		# shellcheck disable=SC2016 # apt's own $(FIELD) syntax
		m=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' 2>/dev/null |
			awk '$3 == "main" && $2 ~ /^(bullseye|bookworm|trixie|forky|sid|oldstable|stable|testing|unstable)(-updates|-backports)?$/ { print $1; exit }')
	fi
	m=${m:-http://deb.debian.org/debian}
	echo "${m%/}"
}
# Add the apt sources our scripts need. Says what it adds.
apt_sources() {
	local f=/etc/apt/sources.list.d/qhca.sources mirror why
	why=$(host_problem)
	[ -z "$why" ] || die "$why: the scripts fetch the pinned sources with Debian's apt (bookworm and trixie deb-src) and add nothing to this host's apt. Use a Debian 12 or 13 host, container or VM (docs/building.md, \"Other hosts\")"
	if [ ! -f "$f" ]; then
		why=$(release_problem)
		[ -z "$why" ] || die "$why: not adding Debian's bookworm, trixie and bookworm-backports sources to $f (QHCA_ANY_DEBIAN=1 adds them anyway)"
		mirror=$(debian_mirror)
		log "adding $f: deb-src bookworm and trixie (QEMU 10.0 and rdma-core 56.1 sources), deb/deb-src bookworm-backports (meson >= 1.5, python3-pycotap, 6.12 kernels)"
		as_root tee "$f" >/dev/null <<SRC
# Added by qhca scripts/common.sh
Types: deb-src
URIs: $mirror
Suites: bookworm trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb deb-src
URIs: $mirror
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
		rm -f "$APT_UPDATED"
	fi
	# bookworm-security carries the newest 6.12 kernels; most images have it.
	if [ ! -f "$APT_UPDATED" ] || [ -n "$(find "$APT_UPDATED" -mmin +1440 2>/dev/null)" ]; then
		log "apt-get update"
		as_root apt-get update -qq
		touch "$APT_UPDATED"
	fi
}

# apt_install PKG... : install packages that are missing (PKG may be PKG/SUITE)
apt_install() {
	local missing=() p name why
	[ "${QHCA_NO_APT:-}" = 1 ] && return 0
	for p in "$@"; do
		name=${p%%/*}
		dpkg-query -W -f='${Status}' "$name" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	why=$(host_problem)
	[ -z "$why" ] || die "$why: not installing anything. Missing: ${missing[*]%%/*}; $(no_apt_hint "${missing[@]}")"
	apt_sources
	log "installing: ${missing[*]}"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Newest version of a source package whose version starts with $2
newest_src_version() {
	apt-cache showsrc "$1" | sed -n 's/^Version: //p' | grep -E "^([0-9]+:)?$2" | sort -V | tail -1
}

# Kernel ABI name of the newest 6.12 amd64 kernel in the apt lists, e.g.
# 6.12.117+deb12-amd64. Override with QHCA_KERNEL_ABI.
kernel_abi() {
	if [ -n "${QHCA_KERNEL_ABI:-}" ]; then echo "$QHCA_KERNEL_ABI"; return; fi
	if [ -f "$BUILD/kernel/ABI" ]; then cat "$BUILD/kernel/ABI"; return; fi
	apt-cache search --names-only "^linux-image-${KERNEL_SERIES//./\\.}\\.[0-9]+.*-amd64-unsigned\$" |
		awk '{print $1}' | grep -vE 'cloud|rt-' |
		sed -e 's/^linux-image-//' -e 's/-unsigned$//' | sort -V | tail -1
}

QEMU_DIR=$BUILD/qemu          # build directory
QEMU_BIN=$QEMU_DIR/qemu-system-x86_64
QEMU_SAN_DIR=$BUILD/qemu-san  # clang, ASan+UBSan, libFuzzer (scripts/build qemu-san)
# The qhca qtests (qtest/NAME.c, wired into QEMU's tests/qtest/meson.build by
# scripts/qemu/0004-qhca-qtests.patch), built by scripts/build qemu
QEMU_QTESTS="qhca-test qhca-wire-test qhca-wire-resize-test qhca-transport-test
	qhca-loopback-test qhca-uc-test qhca-ipv6-test qhca-mcast-test qhca-place-test
	qhca-mw-test qhca-faults-test qhca-dgram-test qhca-teardown-test
	qhca-migration-test qhca-migration-stream-test qhca-port-test"
KERNEL_DIR=$BUILD/kernel      # extracted image, modules, headers
RDMA_CORE_SRC=$SRC/rdma-core
RDMA_CORE_BUILD=$BUILD/rdma-core
