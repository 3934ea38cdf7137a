/* The reference side of the Python test: generation through the C ABI alone, printed as a JSON array of ids.
 * Usage: greedy_tokens MODEL PROMPT N [TEMPERATURE SEED]. The prompt is tokenized with control tokens
 * (ChatML); generation stops after N tokens or at the end-of-turn token, which is not printed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/strata.h"

int main(int argc, char** argv) {
  if (argc != 4 && argc != 6) {
    fprintf(stderr, "usage: greedy_tokens MODEL PROMPT N [TEMPERATURE SEED]\n");
    return 2;
  }
  const int n = atoi(argv[3]);
  strata_model_params mp;
  strata_model_params_init(&mp);
  mp.devices = "cpu";
  strata_sampler_params sp;
  strata_sampler_params_init(&sp);
  if (argc == 6) {
    sp.temperature = (float)atof(argv[4]);
    sp.seed = strtoull(argv[5], NULL, 10);
  }
  strata_model* model = NULL;
  strata_session* session = NULL;
  strata_sampler* sampler = NULL;
  int32_t* ids = NULL;
  size_t n_ids = 0;
  int rc = 1;
  if (strata_model_load(argv[1], &mp, &model) != STRATA_OK) goto done;
  if (strata_tokenize(model, argv[2], strlen(argv[2]), 1, &ids, &n_ids) != STRATA_OK) goto done;
  if (strata_session_new(model, NULL, &session) != STRATA_OK) goto done;
  if (strata_sampler_new(&sp, &sampler) != STRATA_OK) goto done;
  if (strata_session_prompt(session, ids, n_ids) != STRATA_OK) goto done;
  int32_t eos = -1, eot = -1;
  strata_model_special_token(model, STRATA_TOKEN_EOS, &eos);
  strata_model_special_token(model, STRATA_TOKEN_EOT, &eot);
  printf("[");
  for (int i = 0; i < n; ++i) {
    int32_t tok = -1;
    if (strata_session_sample(session, sampler, &tok) != STRATA_OK) goto done;
    if (tok == eos || tok == eot) break;
    printf(i ? ",%d" : "%d", tok);
    if (i + 1 < n && strata_session_decode(session, tok, NULL) != STRATA_OK) goto done;
  }
  printf("]\n");
  rc = 0;
done:
  if (rc) fprintf(stderr, "greedy_tokens: %s\n", strata_last_error());
  strata_free(ids);
  strata_sampler_free(sampler);
  strata_session_free(session);
  strata_model_free(model);
  return rc;
}
