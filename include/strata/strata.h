/* libstrata: the stable C ABI. (Being filled in; status codes are fixed.) */
#ifndef STRATA_H
#define STRATA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(STRATA_BUILDING_LIBRARY)
#define STRATA_API __attribute__((visibility("default")))
#else
#define STRATA_API
#endif

/* Result of every fallible call: 0 is success, negative an error, positive a
 * non-fatal outcome. The message of the last error on this thread comes from
 * strata_last_error(). */
typedef enum strata_status {
  STRATA_OK = 0,
  STRATA_ABORTED = 1,                /* a callback asked to stop; state is consistent */
  STRATA_ERR_INVALID_ARGUMENT = -1,  /* NULL pointer, bad option value, wrong struct_size */
  STRATA_ERR_IO = -2,                /* file cannot be opened, read or written */
  STRATA_ERR_FORMAT = -3,            /* corrupt or truncated file */
  STRATA_ERR_UNSUPPORTED = -4,       /* unknown architecture, tensor type, feature */
  STRATA_ERR_OUT_OF_MEMORY = -5,     /* host RAM, pinned memory or VRAM does not suffice */
  STRATA_ERR_DEVICE = -6,            /* missing device or a device/driver failure */
  STRATA_ERR_CONTEXT_FULL = -7,      /* the tokens do not fit in the session's context */
  STRATA_ERR_STATE = -8,             /* call not valid in the object's current state */
  STRATA_ERR_INTERNAL = -99          /* a bug: please report it */
} strata_status;

/* Version of the library as "MAJOR.MINOR.PATCH". Static storage; never NULL. */
STRATA_API const char* strata_version_string(void);

/* Version numbers of the library. Any argument may be NULL. */
STRATA_API void strata_version(int* out_major, int* out_minor, int* out_patch);

/* The message of the last error returned on the calling thread, or "" when
 * the last call succeeded. Valid until the next strata_* call on this thread. */
STRATA_API const char* strata_last_error(void);

/* A short constant name for a status code ("STRATA_ERR_FORMAT"). Never NULL. */
STRATA_API const char* strata_status_name(strata_status status);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_H */
