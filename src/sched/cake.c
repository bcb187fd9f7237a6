/* Placeholder until the cake discipline lands: refuses to be created. */
#include <stdio.h>
#include "sched/sched_impl.h"

static void *
cake_create(const struct sched_params *p, char *err, size_t errlen)
{
	(void)p;
	SCHED_ERR(err, errlen, "discipline cake is not built yet");
	return NULL;
}

const struct sched_ops sched_cake_ops = {
	.name = "cake",
	.create = cake_create,
};
