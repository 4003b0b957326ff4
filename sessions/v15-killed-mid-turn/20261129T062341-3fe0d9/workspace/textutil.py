"""Small text helpers: slugify() for URLs, word_count() for prose."""


def slugify(text):
    words = "".join(c if c.isalnum() else " " for c in text.lower()).split()
    return "-".join(words)


def word_count(text):
    return len(text.split())
