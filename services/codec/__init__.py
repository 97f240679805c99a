"""The codec service: stateful streaming decode of codec chunks into PCM for many streams at once."""
