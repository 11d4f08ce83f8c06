// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qhca: queue memory and page lists.
 *
 * The device never assumes memory to be contiguous beyond one page: every
 * ring (EQ, CQ, SQ, RQ, SRQ) and every MR is described by a page list of
 * one or two levels (QHCA_PBL_ENTRIES addresses per list page).  The device
 * copies a list when it creates the object, so the lists built here live
 * only as long as the command.
 *
 * Kernel rings are allocated page by page (DMA-coherent); ring entries are
 * powers of two no larger than a page, so none straddles a page.  User
 * rings are the provider's memory, pinned here.
 */

#include <linux/slab.h>
#include <rdma/ib_umem.h>
#include <rdma/iter.h>

#include "qhca.h"

/* Bytes of a ring of @depth entries of 2^@log_stride bytes */
static size_t qhca_ring_bytes(u32 depth, u8 log_stride)
{
	return (size_t)depth << log_stride;
}

int qhca_ring_alloc(struct qhca_dev *dev, struct qhca_ring *r, u32 depth,
		    u8 log_stride)
{
	u32 i;

	if (WARN_ON_ONCE(!is_power_of_2(depth) ||
			 log_stride > QHCA_PAGE_SHIFT))
		return -EINVAL;

	r->depth = depth;
	r->log_stride = log_stride;
	r->umem = NULL;
	r->npages = DIV_ROUND_UP(qhca_ring_bytes(depth, log_stride),
				 QHCA_PAGE_SIZE);
	r->va = kcalloc(r->npages, sizeof(*r->va), GFP_KERNEL);
	r->dma = kcalloc(r->npages, sizeof(*r->dma), GFP_KERNEL);
	if (!r->va || !r->dma)
		goto err;

	for (i = 0; i < r->npages; i++) {
		/* zeroed: a device-written ring starts with no valid entry */
		r->va[i] = dma_alloc_coherent(&dev->pdev->dev, QHCA_PAGE_SIZE,
					      &r->dma[i], GFP_KERNEL);
		if (!r->va[i])
			goto err;
	}
	return 0;

err:
	qhca_ring_free(dev, r);
	return -ENOMEM;
}

/* Pin a user ring at @va (page aligned) of @depth entries */
int qhca_ring_pin(struct qhca_dev *dev, struct qhca_ring *r, u64 va,
		  u32 depth, u8 log_stride)
{
	size_t bytes = qhca_ring_bytes(depth, log_stride);
	struct ib_umem *umem;

	if (!va || !PAGE_ALIGNED(va) || !is_power_of_2(depth))
		return -EINVAL;

	/*
	 * Writable even for rings the device only reads: pinning untouched
	 * anonymous memory read-only would pin the shared zero page.
	 */
	umem = ib_umem_get_va(&dev->ibdev, va, bytes, IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(umem))
		return PTR_ERR(umem);

	r->depth = depth;
	r->log_stride = log_stride;
	r->umem = umem;
	r->va = NULL;
	r->dma = NULL;
	r->npages = ib_umem_num_dma_blocks(umem, QHCA_PAGE_SIZE);
	return 0;
}

void qhca_ring_free(struct qhca_dev *dev, struct qhca_ring *r)
{
	u32 i;

	if (r->umem) {
		ib_umem_release(r->umem);
		r->umem = NULL;
	}
	if (r->va) {
		for (i = 0; i < r->npages; i++)
			if (r->va[i])
				dma_free_coherent(&dev->pdev->dev,
						  QHCA_PAGE_SIZE, r->va[i],
						  r->dma[i]);
	}
	kfree(r->va);
	kfree(r->dma);
	r->va = NULL;
	r->dma = NULL;
	r->npages = 0;
}

/* A page list of a ring's pages, and its descriptor for the command */
int qhca_ring_pbl(struct qhca_dev *dev, const struct qhca_ring *r,
		  struct qhca_pbl *pbl, struct qhca_pbl_desc *desc)
{
	struct ib_block_iter biter;
	u32 i = 0;
	int ret;

	ret = qhca_pbl_alloc(dev, pbl, r->npages);
	if (ret)
		return ret;

	if (r->umem) {
		rdma_umem_for_each_dma_block(r->umem, &biter, QHCA_PAGE_SIZE) {
			if (WARN_ON_ONCE(i >= r->npages))
				break;
			qhca_pbl_set(pbl, i++,
				     rdma_block_iter_dma_address(&biter));
		}
	} else {
		for (i = 0; i < r->npages; i++)
			qhca_pbl_set(pbl, i, r->dma[i]);
	}
	qhca_pbl_desc(pbl, desc, QHCA_PAGE_SHIFT);
	return 0;
}

static __le64 *qhca_pbl_page(struct qhca_dev *dev, dma_addr_t *dma)
{
	return dma_alloc_coherent(&dev->pdev->dev, QHCA_PAGE_SIZE, dma,
				  GFP_KERNEL);
}

/* A page list of @n entries: one level up to QHCA_PBL_ENTRIES, else two */
int qhca_pbl_alloc(struct qhca_dev *dev, struct qhca_pbl *pbl, u32 n)
{
	u32 i;

	memset(pbl, 0, sizeof(*pbl));
	if (!n || n > QHCA_PBL_MAX_PAGES)
		return -EINVAL;

	pbl->n = n;
	pbl->l1 = qhca_pbl_page(dev, &pbl->l1_dma);
	if (!pbl->l1)
		return -ENOMEM;
	if (n <= QHCA_PBL_ENTRIES)
		return 0;

	pbl->nl2 = DIV_ROUND_UP(n, QHCA_PBL_ENTRIES);
	pbl->l2 = kcalloc(pbl->nl2, sizeof(*pbl->l2), GFP_KERNEL);
	pbl->l2_dma = kcalloc(pbl->nl2, sizeof(*pbl->l2_dma), GFP_KERNEL);
	if (!pbl->l2 || !pbl->l2_dma)
		goto err;
	for (i = 0; i < pbl->nl2; i++) {
		pbl->l2[i] = qhca_pbl_page(dev, &pbl->l2_dma[i]);
		if (!pbl->l2[i])
			goto err;
		pbl->l1[i] = cpu_to_le64(pbl->l2_dma[i]);
	}
	return 0;

err:
	qhca_pbl_free(dev, pbl);
	return -ENOMEM;
}

void qhca_pbl_set(struct qhca_pbl *pbl, u32 i, u64 addr)
{
	if (WARN_ON_ONCE(i >= pbl->n))
		return;
	if (!pbl->nl2)
		pbl->l1[i] = cpu_to_le64(addr);
	else
		pbl->l2[i / QHCA_PBL_ENTRIES][i % QHCA_PBL_ENTRIES] =
			cpu_to_le64(addr);
}

void qhca_pbl_desc(const struct qhca_pbl *pbl, struct qhca_pbl_desc *desc,
		   u8 page_shift)
{
	desc->pbl_addr = cpu_to_le64(pbl->l1_dma);
	desc->num_pages = cpu_to_le32(pbl->n);
	desc->levels = pbl->nl2 ? 2 : 1;
	desc->page_shift = page_shift;
	desc->reserved = 0;
}

void qhca_pbl_free(struct qhca_dev *dev, struct qhca_pbl *pbl)
{
	u32 i;

	if (pbl->l2) {
		for (i = 0; i < pbl->nl2; i++)
			if (pbl->l2[i])
				dma_free_coherent(&dev->pdev->dev,
						  QHCA_PAGE_SIZE, pbl->l2[i],
						  pbl->l2_dma[i]);
	}
	kfree(pbl->l2);
	kfree(pbl->l2_dma);
	if (pbl->l1)
		dma_free_coherent(&dev->pdev->dev, QHCA_PAGE_SIZE, pbl->l1,
				  pbl->l1_dma);
	memset(pbl, 0, sizeof(*pbl));
}
