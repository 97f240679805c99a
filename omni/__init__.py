"""omni: disaggregated streaming TTS serving."""
