/* Placeholder until the classifier lands: every frame is non-IP. */
#include <string.h>
#include "shaper/classify.h"

void
classify_key_init(struct classify_key *key, uint64_t seed)
{
	key->k0 = seed;
	key->k1 = ~seed;
}

void
classify_pkt(struct sh_pkt *p, const struct classify_key *key)
{
	(void)key;
	p->flow_hash = p->src_hash = p->dst_hash = 0;
	p->l3_off = p->l4_off = SH_OFF_NONE;
	p->dscp = p->ecn = p->l4_proto = p->flags = 0;
	p->net_off = 14;
}

void
classify_burst(struct sh_pkt **pkts, unsigned int n, const struct classify_key *key)
{
	for (unsigned int i = 0; i < n; i++)
		classify_pkt(pkts[i], key);
}

void
classify_set_dscp(struct sh_pkt *p, uint8_t dscp)
{
	(void)p;
	(void)dscp;
}

int
classify_set_ce(struct sh_pkt *p)
{
	(void)p;
	return 0;
}
