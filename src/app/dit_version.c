/* The library's version (see dit_version.h). */
#include "dit_version.h"

const char *ditstar_version(void)
{
	return DITSTAR_VERSION;
}
