"""Functions RQ jobs call in the tests (RQ imports them by name, so they live in a module of their own)."""


def charge(order: str, amount: int, currency: str = "EUR") -> None:
    raise ValueError("card declined")


def resize(image: str, width: int = 100) -> None:
    raise TimeoutError(f"resizing {image} took too long")


def ship(order: str) -> str:
    return order


def nap(seconds: float) -> float:
    import time

    time.sleep(seconds)
    return seconds
