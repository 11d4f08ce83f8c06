#!/bin/sh
# The driver's tests that need a guest of their own (no peer), in one boot
# (scripts/test.d/driver): link.sh (the host toggles the device's link over
# QMP meanwhile, once link.sh prints QHCA-LINK-READY), then mac.sh (eth0's
# MAC changed, eth0 removed and made again). Their lines are passed on as
# they come (the marker reaches the console at once), each case prefixed
# with the test's name; exits 1 if any test failed.
. /usr/lib/qhca/lib.sh
DIR=$(dirname "$0")
rc=0
for t in link mac; do
	if [ ! -f "$DIR/$t.sh" ]; then
		echo "not ok - $t: $DIR/$t.sh missing"
		rc=1
		continue
	fi
	rm -f /tmp/single.rc
	{ sh "$DIR/$t.sh" 2>&1 || echo $? >/tmp/single.rc; } |
		while IFS= read -r line; do
			case $line in
			"ok - "*) echo "ok - $t: ${line#ok - }" ;;
			"not ok - "*) echo "not ok - $t: ${line#not ok - }" ;;
			*) echo "$line" ;;
			esac
		done
	if [ -f /tmp/single.rc ]; then
		echo "# $t.sh exit $(cat /tmp/single.rc)"
		rc=1
	fi
done
exit $rc
