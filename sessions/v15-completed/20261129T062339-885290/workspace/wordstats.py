"""Word statistics of standard input: count, mean and median word length."""

import sys

from mathutil import mean, median
from textutil import word_count

text = sys.stdin.read()
lengths = [len(word) for word in text.split()]
print(f"{word_count(text)} words; word length: mean {mean(lengths)}, median {median(lengths)}")
