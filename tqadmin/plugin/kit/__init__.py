"""The kit a broker plugin may reuse, written once over the contract (:mod:`tqadmin.plugin`): the leased
consumer and its settles, transfer sessions, the one retry loop, background threads that never die silently,
the listener loop, delay queues folded into the work queues they feed.

A plugin writes what differs about its broker and takes the rest from here. The kit imports the contract; the
contract never imports the kit (a layering test checks).
"""
