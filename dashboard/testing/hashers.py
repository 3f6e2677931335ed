"""The hasher of people's passwords in the test processes
(testing.fixtures._people_hashed_with_fewer_iterations)."""

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class FewerIterationsPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """Django's PBKDF2-SHA256, its algorithm and its hashes' format, at a
    thousandth of its 1,000,000 iterations. A hash carries its count, so a
    hash of either count is checked as Django checks it, and a sign-in
    finds this count current and hashes nothing again."""

    iterations = 1_000
