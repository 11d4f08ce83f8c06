#!/bin/sh
# Run script (apps group, part nfs): NFS over RDMA between two guests
# (docs/consumers.md, "NFS over RDMA").
#
# Guest 1 (server): a tmpfs exported by nfsd (NFSv4 only: no rpcbind),
# rpc.mountd for the export cache, grace and lease times shortened to 10 s
# before nfsd starts, and "rdma 20049" written to /proc/fs/nfsd/portlist.
# Guest 2 (client): mount.nfs4 -o rdma,port=20049 (proto=rdma in
# /proc/mounts, an rdma transport in mountstats), files of 0 B, 1 B, 4 KiB,
# 1 MiB + 7 B and 16 MiB written, unmounted (everything goes to the server),
# their checksums compared by the server on its own disk; a file the server
# wrote read back by the client after a new mount and compared; then the
# unmount leaves nothing behind: no NFS mount, no rdma_cm id on the client;
# on the server only the listener; after nfsd stops, not even that.
_rd=/qhca
# shellcheck source=scripts/guest/apps/apps-lib.sh
. "$_rd/apps-lib.sh"

EXPORT=/export
MNT=/mnt/nfs
SIZES="0 1 4096 1048583 16777216"

server_setup() {
	set -x
	modprobe nfsd && modprobe rpcrdma || return 1
	grep -q ' /proc/fs/nfsd ' /proc/mounts || mount -t nfsd nfsd /proc/fs/nfsd || return 1
	mkdir -p "$EXPORT" /var/lib/nfs/v4recovery /var/lib/nfs/rpc_pipefs /etc/exports.d /run/rpc_pipefs
	mount -t tmpfs -o size=256m tmpfs "$EXPORT" || return 1
	echo "$EXPORT *(rw,sync,no_root_squash,no_subtree_check,insecure,fsid=0)" >/etc/exports
	: >/var/lib/nfs/etab
	exportfs -ra || return 1
	exportfs -v
	# NFSv4 only (no rpcbind in the guest), short grace and lease
	echo 10 >/proc/fs/nfsd/nfsv4gracetime
	echo 10 >/proc/fs/nfsd/nfsv4leasetime
	echo "-3 +4 +4.1 +4.2" >/proc/fs/nfsd/versions || echo "-3 +4" >/proc/fs/nfsd/versions
	rpc.mountd -N 2 -N 3 --no-udp || return 1
	echo 4 >/proc/fs/nfsd/threads || return 1
	echo "rdma 20049" >/proc/fs/nfsd/portlist || return 1
	cat /proc/fs/nfsd/portlist /proc/fs/nfsd/versions /proc/fs/nfsd/threads
	grep -q '^rdma 20049' /proc/fs/nfsd/portlist || { echo "rdma 20049 not in portlist"; return 1; }
}

# md5 lines "SIZE MD5" of the files f-SIZE in DIR
sums() {
	for _s in $SIZES; do
		echo "$_s $(md5sum <"$1/f-$_s" | cut -d' ' -f1)"
	done
}

run_server() {
	if apps_check "nfs: server: nfsd exports $EXPORT (NFSv4) and listens on rdma 20049" 90 server_setup; then
		apps_send SERVER-READY ok
	else
		apps_send SERVER-READY fail
	fi
	# the client's files: compare what reached this disk
	if m=$(apps_wait 'WRITTEN|GIVE-UP' 900) && [ "${m%% *}" = WRITTEN ]; then
		want=$(echo "${m#WRITTEN }" | tr ',' '\n')
		have=$(sums "$EXPORT" 2>&1 | tr '\n' ',' | sed 's/,$//' | tr ',' '\n')
		if [ "$want" = "$have" ]; then
			ok "nfs: server: the client's files arrived whole (md5 of every size compared on the server's disk)"
		else
			not_ok "nfs: server: the client's files arrived whole (md5 of every size compared on the server's disk)" \
				"client wrote:" "$want" "server has:" "$have" "$(ls -l "$EXPORT")"
		fi
		dd if=/dev/urandom of="$EXPORT/from-server" bs=1M count=8 2>/dev/null
		apps_send SERVER-FILE "$(md5sum <"$EXPORT/from-server" | cut -d' ' -f1)"
	else
		not_ok "nfs: server: the client wrote its files" "no WRITTEN message: ${m:-none in 900 s}"
	fi
	# nothing left behind: after the client's unmount, only the listener
	if m=$(apps_wait 'UNMOUNTED|GIVE-UP' 900) && [ "${m%% *}" = UNMOUNTED ]; then
		i=0
		while [ $i -lt 60 ] && [ "$(apps_cm_ids | grep -vc LISTEN)" != 0 ]; do sleep 0.5; i=$((i + 1)); done
		if [ "$(apps_cm_ids | grep -vc LISTEN)" = 0 ]; then
			ok "nfs: server: after the client's unmount no RDMA connection is left (only the listener)"
		else
			not_ok "nfs: server: after the client's unmount no RDMA connection is left (only the listener)" "$(apps_cm_ids)"
		fi
		apps_check "nfs: server: nfsd stops; no rdma_cm id is left" 60 \
			'echo 0 >/proc/fs/nfsd/threads; i=0; while [ $i -lt 50 ] && [ -n "$(apps_cm_ids)" ]; do sleep 0.2; i=$((i + 1)); done; apps_cm_ids' \
			'[ -z "$(apps_cm_ids)" ] || { echo "left:"; apps_cm_ids; exit 1; }'
	else
		not_ok "nfs: server: the client unmounted" "no UNMOUNTED message: ${m:-none in 900 s}"
	fi
	apps_send SERVER-DONE
}

MOUNT="mount.nfs4 $APPS_SRV:/ $MNT -o rdma,port=20049"

client_mount() {	# client_mount WHAT
	apps_check "nfs: client: mount -o rdma,port=20049 ($1): proto=rdma" 180 \
		"modprobe nfs; modprobe nfsv4; modprobe rpcrdma; mkdir -p $MNT; $MOUNT -v; grep ' $MNT ' /proc/mounts; awk '/ mounted on \\/mnt\\/nfs / { f = 1 } f && /xprt:/ { print; exit }' /proc/self/mountstats" \
		'grep -q " '"$MNT"' nfs4 .*proto=rdma" /proc/mounts || { echo "not an NFSv4 mount over rdma: $(grep nfs /proc/mounts)"; exit 1; }; grep -q "xprt:.*rdma" "$OUT" || { echo "mountstats shows no rdma transport"; exit 1; }'
}

client_umount() {	# client_umount WHAT
	apps_check "nfs: client: umount ($1)" 120 "umount $MNT" \
		'! grep -q " '"$MNT"' " /proc/mounts || { echo "still mounted"; exit 1; }'
}

run_client() {
	m=$(apps_wait SERVER-READY 180) || m="SERVER-READY none"
	if [ "${m#SERVER-READY }" != ok ]; then
		not_ok "nfs: client: the server is ready" "server says: ${m#SERVER-READY }"
		apps_send GIVE-UP
		return
	fi
	mkdir -p "$APPS_DIR/src"
	for s in $SIZES; do
		head -c "$s" /dev/urandom >"$APPS_DIR/src/f-$s"
	done
	if client_mount "first" &&
		apps_check "nfs: client: files of $(echo "$SIZES" | tr ' ' ',') bytes written and read back equal" 600 \
			"for s in $SIZES; do cp $APPS_DIR/src/f-\$s $MNT/f-\$s || exit 1; done; sync; for s in $SIZES; do cmp $APPS_DIR/src/f-\$s $MNT/f-\$s || exit 1; done; ls -l $MNT" &&
		client_umount "after writing"; then
		apps_send WRITTEN "$(sums "$APPS_DIR/src" | tr '\n' ',' | sed 's/,$//')"
	else
		apps_send GIVE-UP
		grep -q " $MNT " /proc/mounts && umount -f "$MNT"
		return
	fi
	m=$(apps_wait 'SERVER-FILE' 300) || m=
	if client_mount "again, cold cache"; then
		apps_check "nfs: client: every file read back after a new mount, md5 equal (also the server's 8 MiB file)" 600 \
			"echo 3 >/proc/sys/vm/drop_caches; for s in $SIZES; do cmp $APPS_DIR/src/f-\$s $MNT/f-\$s || exit 1; done; md5sum <$MNT/from-server" \
			'grep -q "^'"${m#SERVER-FILE }"'" "$OUT" || { echo "from-server: md5 $(tail -n 1 "$OUT"), the server says '"${m#SERVER-FILE }"'"; exit 1; }'
		client_umount "at the end"
	fi
	i=0
	while [ $i -lt 50 ] && [ -n "$(apps_cm_ids)" ]; do sleep 0.2; i=$((i + 1)); done
	if grep -q ' nfs4\? ' /proc/mounts || [ -n "$(apps_cm_ids)" ]; then
		not_ok "nfs: client: nothing left behind: no NFS mount, no rdma_cm id" "$(grep nfs /proc/mounts)" "$(apps_cm_ids)"
	else
		ok "nfs: client: nothing left behind: no NFS mount, no rdma_cm id"
	fi
	apps_send UNMOUNTED
	apps_wait SERVER-DONE 300 >/dev/null
}

[ -n "${APPS_FN_ONLY:-}" ] && return 0
apps_start
if [ "$QHCA_ID" = 1 ]; then
	run_server
else
	run_client
fi
apps_done
