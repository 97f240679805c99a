"""Talker runtime: prompt assembly, sampling, the slot model runner and an offline generation driver."""
