/* fuzz_schema.c - any bytes as a YAML extraction schema: a schema or a refusal
 * naming line and column, never a crash. */
#include "fuzz_util.h"
#include "pd_internal.h"
#include "pocketdec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pd_error err;
    pd_schema *s = pd_schema_parse((const char *)data, size, "fuzz.yaml", &err);
    if (s) {
        for (int32_t i = 0; i < pd_schema_n_fields(s); i++)
            if (!pd_schema_field_name(s, i)) abort();
        pd_schema_free(s);
    }
    return 0;
}
