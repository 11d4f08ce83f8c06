// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca statistics and resource views: the device's 64-bit counters as the
 * port's hardware counters (rdma statistic, sysfs hw_counters), and the
 * device's own view of QPs and CQs in rdma resource (fill_res_*).
 */

#include <net/netlink.h>
#include <rdma/ib_verbs.h>
#include <rdma/restrack.h>
#include <uapi/rdma/rdma_netlink.h>

#include "qhca.h"

/* Counter names, in the order of the device's enum qhca_stat */
static const struct rdma_stat_desc qhca_stat_descs[] = {
	[QHCA_STAT_TX_FRAMES] = { .name = "tx_frames" },
	[QHCA_STAT_RX_FRAMES] = { .name = "rx_frames" },
	[QHCA_STAT_RX_DROPPED] = { .name = "rx_dropped" },
	[QHCA_STAT_RX_BAD_ICRC] = { .name = "rx_icrc_errors" },
	[QHCA_STAT_RETRANSMITS] = { .name = "retransmits" },
	[QHCA_STAT_GUEST_ERRORS] = { .name = "guest_errors" },
	[QHCA_STAT_LOOPBACK] = { .name = "loopback_frames" },
	[QHCA_STAT_LOOP_DROPPED] = { .name = "loopback_dropped" },
	[QHCA_STAT_TX_BYTES] = { .name = "tx_bytes" },
	[QHCA_STAT_RX_BYTES] = { .name = "rx_bytes" },
	[QHCA_STAT_NAKS_SENT] = { .name = "naks_sent" },
	[QHCA_STAT_NAKS_RCVD] = { .name = "naks_rcvd" },
	[QHCA_STAT_RNR_NAKS_SENT] = { .name = "rnr_naks_sent" },
	[QHCA_STAT_RNR_NAKS_RCVD] = { .name = "rnr_naks_rcvd" },
	[QHCA_STAT_SEQ_ERRORS] = { .name = "out_of_sequence" },
	[QHCA_STAT_DUP_REQUESTS] = { .name = "duplicate_request" },
	[QHCA_STAT_TIMEOUTS] = { .name = "local_ack_timeout_err" },
	[QHCA_STAT_RETRY_EXCEEDED] = { .name = "retry_exceeded_err" },
	[QHCA_STAT_RNR_RETRY_EXCEEDED] = { .name = "rnr_retry_exceeded_err" },
	/* as mlx5 names its congestion counters */
	[QHCA_STAT_ECN_MARKED] = { .name = "np_ecn_marked_roce_packets" },
	[QHCA_STAT_CNP_SENT] = { .name = "np_cnp_sent" },
	[QHCA_STAT_CNP_HANDLED] = { .name = "rp_cnp_handled" },
	[QHCA_STAT_CNP_IGNORED] = { .name = "rp_cnp_ignored" },
};

static_assert(ARRAY_SIZE(qhca_stat_descs) == QHCA_STAT_NUM);

struct rdma_hw_stats *qhca_alloc_hw_port_stats(struct ib_device *ibdev,
					       u32 port_num)
{
	return rdma_alloc_hw_stats_struct(qhca_stat_descs,
					  ARRAY_SIZE(qhca_stat_descs),
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

/*
 * One QUERY_STATS answer fits a command's response slot, so the counters
 * are read in slices; each slice is a snapshot of its own counters.
 */
#define QHCA_STATS_PER_CMD	(QHCA_CMD_RESP_SLOT / sizeof(__le64))

int qhca_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		      u32 port, int index)
{
	struct qhca_dev *dev = to_qhca_dev(ibdev);
	__le64 val[QHCA_STATS_PER_CMD];
	u32 first, n, i, have;
	int ret;

	for (first = 0; first < stats->num_counters; first += n) {
		struct qhca_cmd_query_stats cmd = {
			.first = cpu_to_le32(first),
		};

		n = min_t(u32, stats->num_counters - first,
			  QHCA_STATS_PER_CMD);
		ret = qhca_cmd_exec(dev, QHCA_CMD_QUERY_STATS, &cmd,
				    sizeof(cmd), val, n * sizeof(val[0]),
				    &have, 0);
		if (ret)
			return ret;
		/* a device with fewer counters leaves the rest at 0 */
		for (i = 0; i < n; i++)
			stats->value[first + i] = first + i < have ?
						  le64_to_cpu(val[i]) : 0;
	}
	return stats->num_counters;
}

static const char *const qhca_qp_state_names[] = {
	[QHCA_QPS_RESET] = "RESET", [QHCA_QPS_INIT] = "INIT",
	[QHCA_QPS_RTR] = "RTR", [QHCA_QPS_RTS] = "RTS",
	[QHCA_QPS_SQD] = "SQD", [QHCA_QPS_SQE] = "SQE",
	[QHCA_QPS_ERR] = "ERR",
};

/*
 * rdma resource show qp -dd: what the device holds for the QP. If the
 * device cannot answer (a dead device), the entry has the core's
 * attributes only.
 */
int qhca_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct qhca_dev *dev = to_qhca_dev(ibqp->device);
	struct qhca_qp *qp = to_qhca_qp(ibqp);
	struct qhca_cmd_obj cmd = { .handle = cpu_to_le32(qp->qpn) };
	struct qhca_qp_state_info s;
	struct nlattr *nest;

	if (qhca_cmd_exec(dev, QHCA_CMD_QUERY_QP_STATE, &cmd, sizeof(cmd),
			  &s, sizeof(s), NULL, 0))
		return 0;
	nest = nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!nest)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_string(msg, "hw_state",
				      s.qp_state < ARRAY_SIZE(qhca_qp_state_names) ?
				      qhca_qp_state_names[s.qp_state] : "?") ||
	    rdma_nl_put_driver_u32_hex(msg, "next_psn", le32_to_cpu(s.next_psn)) ||
	    rdma_nl_put_driver_u32_hex(msg, "acked_psn",
				       le32_to_cpu(s.acked_psn)) ||
	    rdma_nl_put_driver_u32_hex(msg, "epsn", le32_to_cpu(s.epsn)) ||
	    rdma_nl_put_driver_u32(msg, "sq_pi", le16_to_cpu(s.sq_pi)) ||
	    rdma_nl_put_driver_u32(msg, "sq_ci", le16_to_cpu(s.sq_ci)) ||
	    rdma_nl_put_driver_u32(msg, "rq_pi", le16_to_cpu(s.rq_pi)) ||
	    rdma_nl_put_driver_u32(msg, "rq_ci", le16_to_cpu(s.rq_ci)) ||
	    rdma_nl_put_driver_u32(msg, "inflight_bytes",
				   le32_to_cpu(s.inflight_bytes)) ||
	    rdma_nl_put_driver_u32(msg, "rd_outstanding",
				   le32_to_cpu(s.rd_outstanding)) ||
	    rdma_nl_put_driver_u32(msg, "retry_left", s.retry_left) ||
	    rdma_nl_put_driver_u32(msg, "rnr_retry_left", s.rnr_left) ||
	    rdma_nl_put_driver_u32(msg, "srtt_us", le32_to_cpu(s.srtt_us)) ||
	    rdma_nl_put_driver_u32(msg, "min_rtt_us",
				   le32_to_cpu(s.min_rtt_us)) ||
	    rdma_nl_put_driver_u32(msg, "window_bytes",
				   le32_to_cpu(s.window_bytes)) ||
	    rdma_nl_put_driver_u32(msg, "cc_window_bytes",
				   le32_to_cpu(s.cc_window_bytes)))
		goto err;
	nla_nest_end(msg, nest);
	return 0;

err:
	nla_nest_cancel(msg, nest);
	return -EMSGSIZE;
}

/* rdma resource show cq -dd: the CQ's depth, indices and fill */
int qhca_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq)
{
	struct qhca_dev *dev = to_qhca_dev(ibcq->device);
	struct qhca_cq *cq = to_qhca_cq(ibcq);
	struct qhca_cmd_obj cmd = { .handle = cpu_to_le32(cq->cqn) };
	struct qhca_cq_info c;
	struct nlattr *nest;
	u16 pi, ci;

	if (qhca_cmd_exec(dev, QHCA_CMD_QUERY_CQ, &cmd, sizeof(cmd), &c,
			  sizeof(c), NULL, 0))
		return 0;
	pi = le16_to_cpu(c.pi);
	ci = le16_to_cpu(c.ci);
	nest = nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!nest)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_u32(msg, "cqn", cq->cqn) ||
	    rdma_nl_put_driver_u32(msg, "depth", le32_to_cpu(c.depth)) ||
	    rdma_nl_put_driver_u32(msg, "hw_pi", pi) ||
	    rdma_nl_put_driver_u32(msg, "hw_ci", ci) ||
	    /* CQEs written and not yet released by the consumer's doorbell */
	    rdma_nl_put_driver_u32(msg, "fill", (u16)(pi - ci)) ||
	    rdma_nl_put_driver_string(msg, "arm",
				      c.arm == 1 ? "next" :
				      c.arm == 2 ? "solicited" : "no") ||
	    rdma_nl_put_driver_u32(msg, "error", c.error) ||
	    rdma_nl_put_driver_u32(msg, "eqn", le32_to_cpu(c.eqn)))
		goto err;
	nla_nest_end(msg, nest);
	return 0;

err:
	nla_nest_cancel(msg, nest);
	return -EMSGSIZE;
}
