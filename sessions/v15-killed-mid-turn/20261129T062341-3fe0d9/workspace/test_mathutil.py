from mathutil import mean, median

assert mean([1, 2, 3, 4]) == 2.5
assert median([3, 1, 2]) == 2
assert median([4, 1, 3, 2]) == 2.5, f"median of an even list: got {median([4, 1, 3, 2])}"
print("mathutil: all tests passed")
