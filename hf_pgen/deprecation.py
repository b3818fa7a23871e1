"""Keyword arguments hf_pgen renamed: the old name keeps working for a while, with a `FutureWarning` naming the new one.

```python
@renamed_keywords(oov_words_per_example="oov_words")
def batch_decode_with_oovs(tokenizer, sequences, oov_words, ...): ...
```

This file is saved next to the model as remote code (see `hf_pgen.SAVED_WITH_MODEL`): it imports only the standard
library.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

Function = TypeVar("Function", bound=Callable[..., Any])


def renamed_keywords(**new_name_of: str) -> Callable[[Function], Function]:
    """Decorate a function whose keyword arguments `old=` were renamed to `new_name_of[old]`.

    A call with an old name passes the value under the new one and warns (`FutureWarning`, pointing at the caller).

    Args:
        **new_name_of (`str`):
            For each old keyword, its new name.

    Returns:
        The decorator. The decorated function's signature is the new one (`inspect.signature` follows `__wrapped__`).

    Raises:
        TypeError: from the decorated function, when a call passes both an old name and its new one.
    """

    def decorate(function: Function) -> Function:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in new_name_of.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise TypeError(f"{function.__qualname__}() got both {old}= and {new}=: pass {new}= only.")
                warnings.warn(
                    f"{function.__qualname__}({old}=...) is renamed {new}=...; the old name will be removed.",
                    FutureWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
