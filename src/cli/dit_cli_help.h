/* The help texts of the ditstar command line: one per command, and the overview. */
#ifndef DIT_CLI_HELP_H
#define DIT_CLI_HELP_H

extern const char dit_cli_help_generate[];
extern const char dit_cli_help_forward[];
extern const char dit_cli_help_info[];
extern const char dit_cli_help_plan[];
extern const char dit_cli_help_calibrate[];
extern const char dit_cli_help_main[];

#endif
