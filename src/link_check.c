/*
 * The whole of one module's library, linked with the modules it may call
 * and no other (src/meson.build): this program only has to link.
 */
int
main(void)
{
	return 0;
}
