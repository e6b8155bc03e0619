/* pd_encoding.h - reviews (internal to libpocketdec) in another encoding than UTF-8 (a CSV saved by Excel
 * on a Chinese Windows machine is GB18030), read as UTF-8 through iconv, a
 * buffer at a time (memory does not grow with the file). */
#ifndef PD_REVIEWS_ENCODING_H
#define PD_REVIEWS_ENCODING_H

#include <stdbool.h>
#include <stdio.h>

#include "pocketdec_runtime.h"

/* A stream of f's bytes in encoding (an iconv name: gb18030, gbk, utf-16
 * with its byte order mark, ...) as UTF-8; closing it closes f. NULL with
 * PD_ERR_ARG in err when iconv does not know the encoding. A byte sequence that is
 * not of the encoding fails the read (errno EILSEQ) and names its byte
 * offset in the file in *bad (when not NULL, read after the failure). */
FILE *pd_decoded(FILE *f, const char *encoding, pd_error *err);

/* Whether the start of a regular file f (name for the message) is UTF-8;
 * when it is not but is UTF-16 (its byte order mark) or reads cleanly as
 * GB18030, false with a message naming --encoding. f is rewound. A stream
 * that cannot be rewound is not looked at (true). */
bool pd_encoding_check(FILE *f, const char *name, pd_error *err);

#endif
