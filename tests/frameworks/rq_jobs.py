"""Functions RQ jobs call in the tests (RQ imports them by name, so they live in a module of their own)."""


def charge(order: str, amount: int, currency: str = "EUR") -> None:
    raise ValueError("card declined")
