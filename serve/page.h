/* page.h - the playground's files as `pocketdec serve` answers them at /
 * (web/playground.*, web/why.*; page.c). */
#ifndef PD_SERVE_PAGE_H
#define PD_SERVE_PAGE_H

#include <stdbool.h>
#include <stddef.h>

/* The Content-Security-Policy of every file of the page: this server only. */
extern const char serve_page_csp[];

/* The file at path ("/", "/playground.js", ...): its bytes (static, not
 * NUL-terminated), their length and its Content-Type; false for another path. */
bool serve_page_find(const char *path, const char **data, size_t *len, const char **type);

#endif
