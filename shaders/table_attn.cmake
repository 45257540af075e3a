# Attention family (runtime/ops/ops_attn.c): RoPE, KV-cache store, attention (attn_split_*: the
# decode's splits and the prefill's walk, _sg adding lanes' partial scores by subgroup operations;
# attn_tb* for CPU devices, reading q and the cache through uniform texel buffers), the split
# reduce, argmax; attn_cm_*: prefill attention by cooperative matrices (ATTN_CM rows are rewritten
# from the NV extension at build time, see shaders.cmake), attn_cm_emu_*: the same emulated
# (tests). Push-constant blocks: runtime/ops/shader_abi_attn.h.
list(APPEND VKLLM_SHADER_TABLE
  "rope_f32             rope.comp           -            3         rope"
  "kv_store_f16         kv_store.comp       -            4         kv_store"
  "kv_store_q8          kv_store.comp       KV_Q8=1      4         kv_store"
  "rope_kv_f16          rope_kv.comp        -            8         rope_kv"
  "rope_kv_kq8          rope_kv.comp        K_Q8=1       8         rope_kv"
  "rope_kv_vq8          rope_kv.comp        V_Q8=1       8         rope_kv"
  "rope_kv_q8           rope_kv.comp        K_Q8=1,V_Q8=1 8        rope_kv"
  "attn_split_f16       attn.comp           ATTN_SPLIT=1 7         attn"
  "attn_split_kq8       attn.comp           ATTN_SPLIT=1,K_Q8=1 7  attn"
  "attn_split_vq8       attn.comp           ATTN_SPLIT=1,V_Q8=1 7  attn"
  "attn_split_q8        attn.comp           ATTN_SPLIT=1,K_Q8=1,V_Q8=1 7 attn"
  "attn_split_sg_f16    attn.comp           ATTN_SPLIT=1,ATTN_SG=1 7 attn"
  "attn_split_sg_kq8    attn.comp           ATTN_SPLIT=1,ATTN_SG=1,K_Q8=1 7 attn"
  "attn_split_sg_vq8    attn.comp           ATTN_SPLIT=1,ATTN_SG=1,V_Q8=1 7 attn"
  "attn_split_sg_q8     attn.comp           ATTN_SPLIT=1,ATTN_SG=1,K_Q8=1,V_Q8=1 7 attn"
  "attn_split_h16_f16   attn.comp           ATTN_SPLIT=1,ATTN_F16=1 7 attn"
  "attn_split_h16_kq8   attn.comp           ATTN_SPLIT=1,ATTN_F16=1,K_Q8=1 7 attn"
  "attn_split_h16_vq8   attn.comp           ATTN_SPLIT=1,ATTN_F16=1,V_Q8=1 7 attn"
  "attn_split_h16_q8    attn.comp           ATTN_SPLIT=1,ATTN_F16=1,K_Q8=1,V_Q8=1 7 attn"
  "attn_split_sg_h16_f16 attn.comp          ATTN_SPLIT=1,ATTN_SG=1,ATTN_F16=1 7 attn"
  "attn_split_sg_h16_kq8 attn.comp          ATTN_SPLIT=1,ATTN_SG=1,ATTN_F16=1,K_Q8=1 7 attn"
  "attn_split_sg_h16_vq8 attn.comp          ATTN_SPLIT=1,ATTN_SG=1,ATTN_F16=1,V_Q8=1 7 attn"
  "attn_split_sg_h16_q8 attn.comp           ATTN_SPLIT=1,ATTN_SG=1,ATTN_F16=1,K_Q8=1,V_Q8=1 7 attn"
  "attn_cm_f16          attn.comp           ATTN_CM=1    7         attn"
  "attn_cm_kq8          attn.comp           ATTN_CM=1,K_Q8=1 7     attn"
  "attn_cm_vq8          attn.comp           ATTN_CM=1,V_Q8=1 7     attn"
  "attn_cm_q8           attn.comp           ATTN_CM=1,K_Q8=1,V_Q8=1 7 attn"
  "attn_cm_emu_f16      attn.comp           ATTN_CM_EMU=1 7        attn"
  "attn_cm_emu_q8       attn.comp           ATTN_CM_EMU=1,K_Q8=1,V_Q8=1 7 attn"
  "attn_tb_f16          attn_tb.comp        -            7         attn        tttssss"
  "attn_tb_split_f16    attn_tb.comp        ATTN_SPLIT=1 7         attn        tttssss"
  "attn_tb_q8           attn_tb.comp        KV_Q8=1      7         attn        tttssss"
  "attn_tb_split_q8     attn_tb.comp        ATTN_SPLIT=1,KV_Q8=1 7 attn        tttssss"
  "attn_tb_reduce_f32   attn_tb_reduce.comp -            3         attn_reduce tss"
  "attn_reduce_f32      attn_reduce.comp    -            4         attn_reduce"
  "argmax_f32           argmax.comp         -            2         argmax"
)
