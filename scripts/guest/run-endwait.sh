#!/bin/sh
# Run script for the guest group's harness part (scripts/test.d/guest,
# end_wait_check()): two guests without RDMA, one of which leaves without
# the guest init's end barrier, as a guest does whose barrier answer came
# while it had already counted its peer. Guest 1 reports at once and powers
# off 2 s later from the background, while the init waits at the end
# barrier; guest 2 reports 10 s later and then waits at the end barrier for
# a guest that is gone. The host must stop guest 2 (GuestRun's grace after
# every guest has reported), not wait out the run's timeout.
. /usr/lib/qhca/lib.sh
if [ "$QHCA_ID" = 1 ]; then
	# its own session: the init kills the run script's process group when
	# the script ends (so the script waits until the job has left it), and
	# the output pipe must not stay open
	rm -f /run/endwait.started
	setsid sh -c ': >/run/endwait.started; sleep 2; echo "run-endwait: guest 1 leaves without the end barrier" >/dev/console; poweroff -f' \
		</dev/null >/dev/null 2>&1 &
	i=0
	while [ ! -e /run/endwait.started ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	[ -e /run/endwait.started ] || { echo "run-endwait: the power-off job did not start"; exit 1; }
else
	sleep 10
fi
echo "run-endwait: guest $QHCA_ID reported"
exit 0
