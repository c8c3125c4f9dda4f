/* The temporary files of the writes in flight (outputs are written as "NAME.tmp.XXXXXX",
 * then renamed onto NAME), removed when a signal stops the process at once. */
#ifndef DIT_CLI_TMP_H
#define DIT_CLI_TMP_H

/* Removes every file this process holds open whose name is a temporary file of an
 * atomic write (ends in ".tmp." and six characters): those it made and has not renamed
 * into place. Nothing else is touched. Linux (/proc/self/fd); elsewhere it does
 * nothing. Returns how many it removed. */
int dit_cli_tmp_remove_open(void);

#endif
