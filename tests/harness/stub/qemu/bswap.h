/*
 * Stand-in for QEMU's "qemu/bswap.h" (see qemu/osdep.h here) on a
 * little-endian host: byte swaps, cpu_to_le32() and friends, and the
 * unaligned load/store helpers (ldl_be_p(), stl_be_p(), ...).
 *
 * Copyright (c) 2026 The qhca authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef QHCA_HARNESS_STUB_BSWAP_H
#define QHCA_HARNESS_STUB_BSWAP_H

#if G_BYTE_ORDER != G_LITTLE_ENDIAN
#error "the host stubs assume a little-endian host"
#endif

static inline uint16_t bswap16(uint16_t x)
{
    return __builtin_bswap16(x);
}

static inline uint32_t bswap32(uint32_t x)
{
    return __builtin_bswap32(x);
}

static inline uint64_t bswap64(uint64_t x)
{
    return __builtin_bswap64(x);
}

#define cpu_to_le16(x) ((uint16_t)(x))
#define cpu_to_le32(x) ((uint32_t)(x))
#define cpu_to_le64(x) ((uint64_t)(x))
#define le16_to_cpu(x) ((uint16_t)(x))
#define le32_to_cpu(x) ((uint32_t)(x))
#define le64_to_cpu(x) ((uint64_t)(x))
#define cpu_to_be16(x) bswap16(x)
#define cpu_to_be32(x) bswap32(x)
#define cpu_to_be64(x) bswap64(x)
#define be16_to_cpu(x) bswap16(x)
#define be32_to_cpu(x) bswap32(x)
#define be64_to_cpu(x) bswap64(x)

static inline void le16_to_cpus(uint16_t *p)
{
    (void)p;
}

static inline void le32_to_cpus(uint32_t *p)
{
    (void)p;
}

static inline void le64_to_cpus(uint64_t *p)
{
    (void)p;
}

static inline void be32_to_cpus(uint32_t *p)
{
    *p = bswap32(*p);
}

static inline void cpu_to_be32s(uint32_t *p)
{
    *p = bswap32(*p);
}

/* Unaligned loads and stores */

static inline int ldub_p(const void *ptr)
{
    return *(const uint8_t *)ptr;
}

static inline int ldsb_p(const void *ptr)
{
    return *(const int8_t *)ptr;
}

static inline void stb_p(void *ptr, uint8_t v)
{
    *(uint8_t *)ptr = v;
}

static inline uint16_t lduw_he_p(const void *ptr)
{
    uint16_t r;

    memcpy(&r, ptr, sizeof(r));
    return r;
}

static inline void stw_he_p(void *ptr, uint16_t v)
{
    memcpy(ptr, &v, sizeof(v));
}

static inline uint32_t ldl_he_p(const void *ptr)
{
    uint32_t r;

    memcpy(&r, ptr, sizeof(r));
    return r;
}

static inline void stl_he_p(void *ptr, uint32_t v)
{
    memcpy(ptr, &v, sizeof(v));
}

static inline uint64_t ldq_he_p(const void *ptr)
{
    uint64_t r;

    memcpy(&r, ptr, sizeof(r));
    return r;
}

static inline void stq_he_p(void *ptr, uint64_t v)
{
    memcpy(ptr, &v, sizeof(v));
}

static inline int lduw_le_p(const void *ptr)
{
    return lduw_he_p(ptr);
}

static inline int ldsw_le_p(const void *ptr)
{
    return (int16_t)lduw_he_p(ptr);
}

static inline int ldl_le_p(const void *ptr)
{
    return ldl_he_p(ptr);
}

static inline uint64_t ldq_le_p(const void *ptr)
{
    return ldq_he_p(ptr);
}

static inline int lduw_be_p(const void *ptr)
{
    return bswap16(lduw_he_p(ptr));
}

static inline int ldsw_be_p(const void *ptr)
{
    return (int16_t)bswap16(lduw_he_p(ptr));
}

static inline int ldl_be_p(const void *ptr)
{
    return bswap32(ldl_he_p(ptr));
}

static inline uint64_t ldq_be_p(const void *ptr)
{
    return bswap64(ldq_he_p(ptr));
}

static inline void stw_le_p(void *ptr, uint16_t v)
{
    stw_he_p(ptr, v);
}

static inline void stl_le_p(void *ptr, uint32_t v)
{
    stl_he_p(ptr, v);
}

static inline void stq_le_p(void *ptr, uint64_t v)
{
    stq_he_p(ptr, v);
}

static inline void stw_be_p(void *ptr, uint16_t v)
{
    stw_he_p(ptr, bswap16(v));
}

static inline void stl_be_p(void *ptr, uint32_t v)
{
    stl_he_p(ptr, bswap32(v));
}

static inline void stq_be_p(void *ptr, uint64_t v)
{
    stq_he_p(ptr, bswap64(v));
}

#endif
