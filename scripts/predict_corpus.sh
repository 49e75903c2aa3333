#!/bin/bash
# Every prediction of a fixed corpus (the fleet samples, the H200 captures and the public traces
# in ../shared/traces, on their own platform and on others), one `mimic predict --json` each,
# into OUT/N.json with OUT/index listing each run's exit code and arguments. Predictions are
# deterministic: run it with the build before a change and the build after, then `diff -r` the
# two folders to show that a refactor moved no figure, or which ones a model change moved.
#
#   scripts/predict_corpus.sh OLD_MIMIC /tmp/before
#   scripts/predict_corpus.sh build/default/cli/mimic /tmp/after && diff -r /tmp/before /tmp/after
set -u
if [ $# -ne 2 ]; then echo "usage: $0 MIMIC OUT" >&2; exit 2; fi
M=$(realpath "$1"); O=$(realpath -m "$2")
mkdir -p "$O"; : > "$O/index"
cd "$(dirname "$0")/.."
F=fleet_samples; T=${MIMIC_TRACES:-../shared/traces}
i=0
run() { i=$((i+1)); "$M" predict "$@" --json > "$O/$i.json" 2> "$O/$i.err"; echo "$? $*" >> "$O/index"; }
for s in mlp cnn_bn transformer embbag_rec; do
  run $F/$s.et.json.gz --kineto $F/$s.kineto.json.gz --platform cpu_host
  run $F/$s.et.json.gz --kineto $F/$s.kineto.json.gz --platform h100_sxm
  run $F/$s.et.json.gz --kineto $F/$s.kineto.json.gz --platform cpu_host --no-trace-overheads
  run $F/$s.et.json.gz --platform cpu_host
done
for s in dlrm gpt2 resnet50_b128 resnet50_b64; do
  run $F/h200/$s.et.json.gz --kineto $F/h200/$s.kineto.json.gz
  run $F/h200/$s.et.json.gz --kineto $F/h200/$s.kineto.json.gz --platform a100_80gb
  run $F/h200/$s.et.json.gz --platform cpu_host
done
for d in ddp_mlp_2r ddp_mlp_4r; do
  for f in $F/$d/*.et.json.gz; do
    k=${f/.et./.kineto.}
    run "$f" --kineto "$k" --platform cpu_host
    run "$f" --kineto "$k" --world-size 8 --platform h100_sxm
  done
done
if [ -d "$T" ]; then
  run $T/param-linear/linear_et.json.gz --kineto $T/param-linear/linear_kineto.json.gz
  run $T/hta-simple-add/simple_add_et.json.gz --kineto $T/hta-simple-add/simple_add_kineto.json.gz
  for k in hta-event-sync/event_sync_kineto.json.gz hta-event-sync/event_sync_multi_stream_kineto.json.gz \
           hta-gpu-kineto/trace_diff_test_kineto.json.gz; do
    run $T/$k
  done
  run $T/hta-backward-thread/backward_thread_kineto.json --platform a100_80gb
  run $T/hta-gpu-kineto/sampled_rank0_kineto.json.gz --platform a100_80gb
  for f in $T/param-pt2/*.json* $T/param-resnet-1gpu/*et*.json* $T/chakra-allgather/*.json*; do
    run "$f" --platform h100_sxm
    run "$f" --platform cpu_host
  done
fi
echo "$i predictions in $O ($(grep -vc '^0 ' "$O/index") failed)"
