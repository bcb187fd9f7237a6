/* Placeholder until the fq_codel discipline lands: refuses to be created. */
#include <stdio.h>
#include "sched/sched_impl.h"

static void *
fq_codel_create(const struct sched_params *p, char *err, size_t errlen)
{
	(void)p;
	SCHED_ERR(err, errlen, "discipline fq_codel is not built yet");
	return NULL;
}

const struct sched_ops sched_fq_codel_ops = {
	.name = "fq_codel",
	.create = fq_codel_create,
};
