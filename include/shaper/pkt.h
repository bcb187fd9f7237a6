/*
 * The packet adapter: the per-packet record the classifier fills and the
 * scheduler queues. In shaperd it lives in the mbuf's private area, so
 * queues are intrusive lists and the fast path allocates nothing; in the
 * simulator it is a plain array element. Nothing here depends on DPDK.
 */
#ifndef SHAPER_PKT_H
#define SHAPER_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SH_OFF_NONE 0xffffu

/* Facts the classifier found (sh_pkt.flags). */
enum sh_pkt_flag {
	SH_PKT_IPV4 = 1u << 0,
	SH_PKT_IPV6 = 1u << 1,
	SH_PKT_TCP = 1u << 2,
	SH_PKT_UDP = 1u << 3,
	SH_PKT_ARP = 1u << 4,
	SH_PKT_TCP_ACK = 1u << 5, /* TCP with ACK set and SYN clear */
	SH_PKT_FRAG = 1u << 6,    /* IP fragment: no L4 ports */
	SH_PKT_L4S = 1u << 7,     /* set by cake and fq_codel with l4s on: queued as L4S */
};

/*
 * Lengths: len is the whole frame (every segment of a chained mbuf) and is
 * what the schedulers charge; hdr_len is how many bytes at data are
 * contiguous and readable (the first segment). Every header read (the
 * classifier, the ACK filter, the DSCP/CE rewrites, `flows`) is bounded by
 * hdr_len, never by len: hdr_len <= len, and on a chained jumbo frame it is
 * much smaller.
 */
struct sh_pkt {
	struct sh_pkt *next; /* queue link, owned by whoever holds the packet */
	uint8_t *data;       /* first byte of the L2 frame */
	uint64_t enq_ns;     /* set by the scheduler at enqueue */
	uint32_t len;        /* L2 frame length, FCS excluded: what is charged */
	uint32_t hdr_len;    /* bytes readable at data (contiguous): bounds header reads */
	uint32_t adj_len;    /* overhead-adjusted length, set by the scheduler */
	uint32_t mem;        /* buffer memory this packet pins (truesize) */
	uint32_t flow_hash;  /* direction-symmetric 5-tuple hash */
	uint32_t src_hash;   /* hash of the source address only (0 if non-IP) */
	uint32_t dst_hash;   /* hash of the destination address only */
	uint16_t l3_off;     /* offset of the IP header, SH_OFF_NONE if none */
	uint16_t l4_off;     /* offset of the L4 header, SH_OFF_NONE if none */
	uint16_t queue;      /* flow queue index, set by the scheduler */
	uint8_t dscp;        /* DSCP of the outermost IP header (ARP: 56) */
	uint8_t ecn;         /* the two ECN bits as received */
	uint8_t l4_proto;    /* IP protocol number, 0 if none */
	uint8_t flags;       /* enum sh_pkt_flag */
	uint8_t tin;         /* set by the scheduler */
	uint8_t net_off;     /* MAC header length incl. VLAN/PPPoE tags */
	uint8_t drop_reason; /* enum shaper_drop_reason, set when dropped */
};

/*
 * A singly linked FIFO with a tail pointer and a count: drop lists, the
 * emulator's queue, and each flow queue of fq_codel and cake (whose
 * count is the flow's packet count, so nothing walks a list to count).
 * All inline: push and pop are on the packet path.
 */
struct sh_pkt_list {
	struct sh_pkt *head;
	struct sh_pkt *tail;
	uint32_t count;
};

static inline void
sh_pkt_list_init(struct sh_pkt_list *l)
{
	l->head = NULL;
	l->tail = NULL;
	l->count = 0;
}

static inline void
sh_pkt_list_push(struct sh_pkt_list *l, struct sh_pkt *p)
{
	p->next = NULL;
	if (l->tail != NULL)
		l->tail->next = p;
	else
		l->head = p;
	l->tail = p;
	l->count++;
}

static inline struct sh_pkt *
sh_pkt_list_pop(struct sh_pkt_list *l)
{
	struct sh_pkt *p = l->head;

	if (p == NULL)
		return NULL;
	l->head = p->next;
	if (l->head == NULL)
		l->tail = NULL;
	l->count--;
	p->next = NULL;
	return p;
}

/*
 * The first packet l gained since its tail was old_tail (NULL: l was empty
 * then, so its head); NULL when it gained none. A caller that noted the
 * tail before handing l on walks what was appended from here: every drop
 * list is read this way.
 */
static inline struct sh_pkt *
sh_pkt_list_after(const struct sh_pkt_list *l, const struct sh_pkt *old_tail)
{
	return old_tail != NULL ? old_tail->next : l->head;
}

/* Take p out of the middle of l; prev is the packet before it, NULL if p is the head. */
static inline void
sh_pkt_list_unlink(struct sh_pkt_list *l, struct sh_pkt *prev, struct sh_pkt *p)
{
	if (prev == NULL)
		l->head = p->next;
	else
		prev->next = p->next;
	if (l->tail == p)
		l->tail = prev;
	l->count--;
	p->next = NULL;
}

#endif
