# shellcheck shell=bash
# Argument checking for the bash entry points (scripts/build, build-*,
# fetch, checkpatch-driver). Source it BEFORE scripts/common.sh: it has no
# side effects (common.sh creates build/), so that --help and a mistake
# change nothing.
#
#   qhca_help            print the script's header comment (its usage) on
#                        stdout and exit 0
#   qhca_usage_error MSG print MSG and a hint on stderr and exit 2
#   qhca_no_args "$@"    for scripts that take no arguments: --help, or
#                        anything at all is an error

qhca_help() {
	# the comment block after the #! line, without its "# "
	sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "$0"
	exit 0
}

qhca_usage_error() {
	printf '%s: %s (see %s --help)\n' "scripts/$(basename "$0")" "$*" \
		"scripts/$(basename "$0")" >&2
	exit 2
}

qhca_no_args() {
	case ${1-} in
	-h | --help) qhca_help ;;
	'') return 0 ;;
	-*) qhca_usage_error "unknown option '$1'" ;;
	*) qhca_usage_error "takes no arguments, not '$1'" ;;
	esac
}
