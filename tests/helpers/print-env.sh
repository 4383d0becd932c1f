#!/bin/sh
# print-env.sh - a rank that prints its rank environment as KEY=VALUE lines
for k in RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE NODE_RANK GROUP_RANK \
    MASTER_ADDR MASTER_PORT CUDA_VISIBLE_DEVICES LOCKSTEP_JOB_ID \
    LOCKSTEP_ATTEMPT LOCKSTEP_NODE LOCKSTEP_CHECKPOINT_DIR \
    LOCKSTEP_RESUME_FROM LOCKSTEP_RESUME_STEP USER_VAR; do
    eval "v=\${$k-__unset__}"
    echo "$k=$v"
done
echo "PWD=$(pwd)"
echo "done rank $RANK" >&2
