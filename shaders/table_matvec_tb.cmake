# Decode matvec for CPU devices (runtime/ops/ops_matvec_tb.c): weights repacked at load time, read
# through uniform texel buffers, x through another (see shaders/shaders.cmake for the columns); one
# variant per storage format, which several GGUF types share (see matvec_tb.comp).
list(APPEND VKLLM_SHADER_TABLE
  "matvec_tb_f32   matvec_tb.comp  TB_F32=1   3  matvec_tb  tts"
  "matvec_tb_f16   matvec_tb.comp  TB_F16=1   3  matvec_tb  tts"
  "matvec_tb_q8_0  matvec_tb.comp  TB_Q8_0=1  4  matvec_tb  ttts"
  "matvec_tb_q4_0  matvec_tb.comp  TB_Q4_0=1  4  matvec_tb  ttts"
  "matvec_tb_q4_k  matvec_tb.comp  TB_Q4_K=1  4  matvec_tb  ttts"
  "matvec_tb_q5_k  matvec_tb.comp  TB_Q5_K=1  4  matvec_tb  ttts"
  "matvec_tb_q6_k  matvec_tb.comp  TB_Q6_K=1  4  matvec_tb  ttts"
  "matvec_tb_q2_k  matvec_tb.comp  TB_Q2_K=1  4  matvec_tb  ttts"
  "matvec_tb_id_f32   matvec_tb.comp  TB_F32=1,MATVEC_ID=1   4  matvec_tb_id  ttss"
  "matvec_tb_id_f16   matvec_tb.comp  TB_F16=1,MATVEC_ID=1   4  matvec_tb_id  ttss"
  "matvec_tb_id_q8_0  matvec_tb.comp  TB_Q8_0=1,MATVEC_ID=1  5  matvec_tb_id  tttss"
  "matvec_tb_id_q4_0  matvec_tb.comp  TB_Q4_0=1,MATVEC_ID=1  5  matvec_tb_id  tttss"
  "matvec_tb_id_q4_k  matvec_tb.comp  TB_Q4_K=1,MATVEC_ID=1  5  matvec_tb_id  tttss"
  "matvec_tb_id_q5_k  matvec_tb.comp  TB_Q5_K=1,MATVEC_ID=1  5  matvec_tb_id  tttss"
  "matvec_tb_id_q6_k  matvec_tb.comp  TB_Q6_K=1,MATVEC_ID=1  5  matvec_tb_id  tttss"
  "matvec_tb_id_q2_k  matvec_tb.comp  TB_Q2_K=1,MATVEC_ID=1  5  matvec_tb_id  tttss"
  "matvec_tb_id_gg_q4_k  matvec_tb.comp  TB_GG_Q4_K=1,MATVEC_ID=1  4  matvec_tb_id  ttss"
  "matvec_tb_id_gg_q5_k  matvec_tb.comp  TB_GG_Q5_K=1,MATVEC_ID=1  4  matvec_tb_id  ttss"
)
