/*
 * What the parts of test-qhca-roce share: the checks of a case, the
 * deterministic random numbers, byte helpers, the frame builders and
 * mutators and the opcode reference table (all in test-qhca-roce.c), the
 * reference frame from Scapy (roce-crc.c), and the cases, one file per
 * subject (roce-*.c), which test-qhca-roce.c's main() adds in order.
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QHCA_ROCE_TEST_H
#define QHCA_ROCE_TEST_H

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* Checks: a failed one is printed and fails the running case at its end */
#define CHECK(cond) \
    check((cond), #cond, __FILE__, __LINE__)

#define CHECK_EQ(a, b) \
    check_eq((uint64_t)(a), (uint64_t)(b), #a " == " #b, __FILE__, __LINE__)

extern bool case_failed;
void check(bool ok, const char *what, const char *file, int line);
void check_eq(uint64_t a, uint64_t b, const char *what,
              const char *file, int line);

/*
 * xorshift64*: deterministic, seeded by QHCA_TEST_SEED; the cases draw
 * from one sequence in the order main() adds them
 */
uint64_t rnd64(void);
uint32_t rnd(uint32_t n);

uint32_t get_be16(const uint8_t *p);
uint32_t get_le32(const uint8_t *p);
void put_be16(uint8_t *p, uint32_t v);

/* Parse a copy of buf in a heap block of exactly len bytes */
QhcaRoceErr parse_exact(const uint8_t *buf, size_t len,
                        QhcaRocePkt *pkt);

/* Record a frame with a valid ICRC ending at icrc_end (with --pcap) */
void pcap_record(const uint8_t *frame, size_t len, size_t icrc_end);

/* Helpers to build and mutate frames */
extern bool use_ip6;
void random_ip6(uint8_t *a);
void random_hdr(QhcaRoceHdr *h, uint8_t opcode);
bool op_has(const QhcaRoceOpInfo *op, QhcaRoceExt ext);
uint8_t *build_frame(const QhcaRoceHdr *h, const uint8_t *payload,
                     size_t payload_len, size_t *len);
extern uint8_t base[256];
extern size_t base_len;
void make_base(uint8_t opcode, size_t payload_len);
bool is_ip6(const uint8_t *f);
void fix_ip_csum(uint8_t *f);
size_t ip_end(const uint8_t *f);
void fix_udp6_csum(uint8_t *f, size_t frame_len);
void fix_icrc(uint8_t *f, size_t frame_len);
void reframe(uint8_t *f, size_t frame_len);
QhcaRoceErr parse_base(size_t len);

/*
 * What IBA 1.4 (chapter 9, table 38 and 9.2/9.3) says each opcode
 * carries; the definition's initializer must have N_EXPECTED_OPS entries
 */
typedef struct ExpectedOp {
    uint8_t opcode;
    bool payload;
    int n_ext;
    QhcaRoceExt ext[2];
    int ext_len;
} ExpectedOp;

#define N_EXPECTED_OPS 40
extern const ExpectedOp expected_ops[N_EXPECTED_OPS];

/*
 * A UC SEND_ONLY built by Scapy's RoCE layer (roce-crc.c): SCAPY_UC_LEN
 * bytes of frame and 4 of Ethernet padding
 */
#define SCAPY_UC_LEN    (14 + 64)   /* without the Ethernet padding */
extern const uint8_t scapy_uc_frame[SCAPY_UC_LEN + 4];

/* roce-crc.c */
void test_crc32(void);
void test_crc32_fast(void);
void test_inet_csum(void);
void test_icrc_connectx4_cnp(void);
void test_icrc_scapy_uc(void);
void test_icrc_masked_fields(void);

/* roce-build.c */
void test_opcode_table(void);
void test_udp_sport(void);
void test_roundtrip(void);
void test_build_known_frame(void);
void test_build_errors(void);

/* roce-parse.c */
void test_parse_errors(void);
void test_parse_trailer(void);
void test_parse_truncated(void);
void test_parse_bit_flips(void);

/* roce-fuzz.c */
void test_fuzz_random(void);
void test_fuzz_mutate(void);

/* roce-steer.c */
void test_steer(void);
void test_finish_csum(void);

/* roce-ipv6.c */
void test_ip6_known_frame(void);
void test_ip6_icrc_masked_fields(void);
void test_ip6_roundtrip(void);
void test_ip6_build_errors(void);
void test_ip6_parse_errors(void);
void test_ip6_parse_truncated(void);
void test_ip6_parse_bit_flips(void);
void test_ip6_gids(void);

#endif
