"""Start moto_server with DynamoDB's number precision.

DynamoDB keeps 38 significant digits in a number; moto does its arithmetic
(UpdateItem ADD) with Python's default decimal context of 28 digits. Raising
the default context before moto loads makes sums exact, as on DynamoDB.
"""
import decimal
import sys

decimal.DefaultContext.prec = 38
decimal.setcontext(decimal.Context(prec=38))

from moto.server import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
