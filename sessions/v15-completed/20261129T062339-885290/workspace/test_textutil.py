from textutil import slugify, word_count

assert slugify("Hello, World!") == "hello-world"
assert word_count("one two  three") == 3
print("textutil: all tests passed")
