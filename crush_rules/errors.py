"""The one exception type of the package."""


class CrushError(Exception):
    """A refusal or failure; ``str(error)`` is a single line meant for an operator.

    The message names what is wrong and, where there is one, the smallest fix.
    """

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))
